package launch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/task"
	"github.com/weirhq/weir/internal/taskmanager"
)

// A job's program (a built-in job's run function, later a user's main)
// builds its graph and calls Execute, which calls Start. Where that
// happens decides what Start does (docs/distributed-runtime.md, decisions
// 2 and 3), and the caller says so through the context:
//   - no role: Start runs the job on a new embedded cluster (as always);
//   - OnCluster: this process is a JobManager with TaskManagers in other
//     processes; Start submits the job to that cluster, which outlives it;
//   - Building: this process is a TaskManager asked to run the job; Start
//     only hands the built job to the caller (Built) and returns ErrBuilt.

type roleKey struct{}

// Submission is what a JobManager process knows of a job it runs: which
// program built it, from which arguments (sent to its TaskManagers, which
// build the same graph), and whom to tell of its id.
type Submission struct {
	Program string
	Args    []string
	// Submitted, if set, is called with the job's id once it is submitted.
	Submitted func(id string)
	// JobID, if set, is the job's id: a job recovered by a new leader
	// (high availability) keeps the id it was submitted under.
	JobID string
	// ResumeFrom, if set, replaces the program's Config.ResumeFrom: the
	// checkpoint a recovered job resumes from.
	ResumeFrom string
	// Fencing, if set, fences the job's checkpoints by the leader's term
	// instead of the lineage lease (high availability: the HA store's
	// fence outlives a paused process, which a lease in checkpoint storage
	// would make a new leader wait for).
	Fencing *jobmanager.Fencing
}

type onCluster struct {
	c   *cluster.Local
	sub Submission
}

// OnCluster returns ctx with the JobManager role: Start submits to c, a
// cluster whose TaskManagers run in other processes (cluster.Config.Remote).
func OnCluster(ctx context.Context, c *cluster.Local, sub Submission) context.Context {
	return context.WithValue(ctx, roleKey{}, &onCluster{c: c, sub: sub})
}

// ErrBuilt is what Start returns in the Building role, after handing the
// job to the caller: the program built its job and must not run it here.
var ErrBuilt = errors.New("weir: the job was built to run in this TaskManager; it is not run here")

// Built receives the job a program built in the Building role.
type Built struct {
	cfg *Config
}

// Building returns ctx with the TaskManager role: the next Start under it
// records its Config in the returned Built and returns ErrBuilt.
func Building(ctx context.Context) (context.Context, *Built) {
	b := &Built{}
	return context.WithValue(ctx, roleKey{}, b), b
}

// IsBuilding reports whether ctx has the Building role: the program's job
// is only built here, so nothing that checks the world (sink validators,
// paths) runs; the JobManager's process did that.
func IsBuilding(ctx context.Context) bool {
	_, ok := ctx.Value(roleKey{}).(*Built)
	return ok
}

// BuildJob makes the TaskManager's job of m in this process: run builds the
// graph (the program m names, run under a Building context), which must be
// the graph the JobManager built (m.Fingerprint), and the checkpoint
// storage m names is opened here. stateDir is this TaskManager's working
// directory for on-disk state (a folder per job is made in it).
func BuildJob(m protocol.RegisterJob, run func(ctx context.Context) error, stateDir string, logger *slog.Logger) (*taskmanager.Job, error) {
	ctx, built := Building(context.Background())
	err := run(ctx)
	switch {
	case errors.Is(err, ErrBuilt) && built.cfg != nil:
	case err != nil:
		return nil, failure.Permanent(fmt.Errorf("building job %q from %s %s: %w", m.Name, m.Program, strings.Join(m.Args, " "), err))
	default:
		return nil, failure.Permanent(fmt.Errorf("building job %q: %s %s returned without executing a job", m.Name, m.Program, strings.Join(m.Args, " ")))
	}
	cfg := built.cfg
	jg := cfg.Graph
	if m.MaxParallelism != jg.MaxParallelism {
		// The JobManager adopted the max parallelism of the snapshot it
		// resumes from (Start): compile with it, as it did.
		sg := cfg.Stream
		sg.JobName, sg.MaxParallelism = cfg.Name, m.MaxParallelism
		if jg, err = graph.Compile(&sg); err != nil {
			return nil, failure.Permanent(fmt.Errorf("building job %q at max parallelism %d: %w", m.Name, m.MaxParallelism, err))
		}
	}
	if jg.Fingerprint != m.Fingerprint {
		return nil, failure.Permanent(fmt.Errorf("job %q: the graph built here (fingerprint %s) differs from the JobManager's (fingerprint %s): "+
			"the processes run different builds, or the program builds its graph from something other than its arguments", m.Name, jg.Fingerprint, m.Fingerprint))
	}
	mode := operator.Streaming
	if m.Batch {
		mode = operator.Batch
	}
	j := &taskmanager.Job{ID: m.JobID, Graph: jg, Mode: mode, BufferTimeout: time.Duration(m.BufferTimeout), BufferSize: m.BufferSize,
		BuffersPerChannel: m.BuffersPerChannel, FloatingBuffers: m.FloatingBuffers, Clock: cfg.Clock, StateBackend: m.StateBackend,
		StateDir: filepath.Join(stateDir, m.JobID)}
	if c := m.Checkpoints; c != nil {
		store, err := storage.Open(context.Background(), c.StorageURL)
		if err != nil {
			return nil, fmt.Errorf("job %q: opening its checkpoint storage %s: %w", m.Name, c.StorageURL, err)
		}
		if err := store.LimitWriteMemory(c.WriteMemory); err != nil {
			store.Close()
			return nil, failure.Permanent(fmt.Errorf("job %q: checkpoint write memory: %w", m.Name, err))
		}
		if err := checkProbe(store, c); err != nil {
			store.Close()
			return nil, err
		}
		bm := barrier.ExactlyOnce
		if c.AtLeastOnce {
			bm = barrier.AtLeastOnce
		}
		j.Checkpoints = &task.Checkpoints{Store: store, Mode: bm, Incremental: c.Incremental, Interval: millis(c.Interval),
			ChannelStateMemory: c.ChannelStateMemory, Lineage: c.Lineage, SavepointsOnly: c.SavepointsOnly}
	}
	j.Release = func() {
		if j.Checkpoints != nil {
			j.Checkpoints.Store.Close()
		}
		os.RemoveAll(j.StateDir)
	}
	logger.Info("job built", "job", m.JobID, "name", m.Name, "program", m.Program, "fingerprint", jg.Fingerprint)
	return j, nil
}

// shareStorage refuses what a job on a multi-process cluster cannot do
// (checkShareable). For storage it accepts, it writes a probe object that
// each TaskManager must read back (BuildJob), so a file:// path that is
// not shared fails the job naming the TaskManager and the path; res
// deletes the probe when the job ends. Decision 24 of
// docs/distributed-runtime.md.
func shareStorage(ctx context.Context, spec *jobmanager.JobSpec, res *jobResources, collects int) (probe, token string, err error) {
	if err := checkShareable(spec, collects); err != nil || spec.Checkpoints == nil {
		return "", "", err
	}
	store := spec.Checkpoints.Store
	// The token in the name too: a job recovered by a new leader keeps its
	// id, and the old leader's run may delete its own probe meanwhile.
	token = rand.Text()
	probe = "_weir-probe-" + spec.ID + "-" + token[:8]
	if err := store.Put(ctx, probe, []byte(token)); err != nil {
		return "", "", fmt.Errorf("writing a probe into the checkpoint storage %s: %w", store.URL(), err)
	}
	res.beforeClose = append(res.beforeClose, func() { store.Delete(context.Background(), probe) })
	return probe, token, nil
}

// checkProbe reads the JobManager's probe back from store.
func checkProbe(store *storage.Store, c *protocol.JobCheckpoints) error {
	if c.Probe == "" {
		return nil
	}
	b, err := store.Get(context.Background(), c.Probe)
	if err == nil && string(b) == c.ProbeToken {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("it holds %d other bytes", len(b))
	}
	return failure.Permanent(fmt.Errorf("the checkpoint storage %s is not the JobManager's: this TaskManager cannot read back %s, which the JobManager wrote there (%v); "+
		"give every process a path they share (a shared file system) or s3://", c.StorageURL, c.Probe, err))
}

// checkShareable refuses what a job on a multi-process cluster cannot do:
// checkpoint storage only this process can read (mem://), savepoints
// staged in this process's temporary directory (a job without
// checkpointing) and Collect sinks (collects of them; they hand elements
// to this process). Decisions 24 and 25 of docs/distributed-runtime.md;
// unaligned checkpoints work across processes (decision 21).
func checkShareable(spec *jobmanager.JobSpec, collects int) error {
	cp := spec.Checkpoints
	switch {
	case collects > 0:
		return failure.Permanent(errors.New("Collect hands elements to this process; in a cluster its subtasks run in TaskManagers: " +
			"write to a sink, or use the embedded cluster (without --jobmanager)"))
	case cp == nil:
		return nil
	case cp.SavepointsOnly:
		return failure.Permanent(errors.New("a job without checkpointing stages its savepoints in the JobManager's temporary directory, " +
			"which TaskManagers in other processes cannot reach, so it cannot run on this cluster yet: give it checkpointing with a " +
			"checkpoint directory every process shares (Config.Checkpointing.Dir; weir run --checkpoint-dir for the jobs that take it), " +
			"or run it on the embedded cluster (weir run without --jobmanager)"))
	case strings.HasPrefix(cp.Store.URL(), "mem://"):
		return failure.Permanent(fmt.Errorf("checkpoint storage %s is this process's memory, which TaskManagers in other processes cannot reach: "+
			"give a file:// path every process shares, or s3://", cp.Store.URL()))
	}
	return nil
}
