package launch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/scratch"
)

// savepointPollGrace bounds how long an ended job's embedded cluster keeps
// serving until a completed stop-with-savepoint request has been polled.
const savepointPollGrace = 5 * time.Second

// Start starts cfg's job on a new local cluster and returns at once.
// Canceling ctx cancels the job. The cluster shuts down when the job ends,
// after which cfg.OnEnd runs and Job.Done is closed. On error nothing it
// started or opened is left behind, and cfg.OnEnd is not called.
func Start(ctx context.Context, cfg Config) (*Job, error) {
	role := ctx.Value(roleKey{})
	if b, ok := role.(*Built); ok {
		c := cfg
		b.cfg = &c
		return nil, ErrBuilt
	}
	shared, _ := role.(*onCluster)
	if shared == nil {
		if err := checkRole(cfg.Role); err != nil {
			return nil, err
		}
		switch cfg.Role {
		case RoleJobManager:
			return startApplication(ctx, cfg)
		case RoleTaskManager:
			return serveApplication(ctx, cfg)
		}
	}
	name, jg := cfg.Name, cfg.Graph
	if cfg.Checkpointing != nil || cfg.ResumeFrom != "" {
		warnMissingUIDs(cfg.Logger, name, cfg.Stream.Nodes)
	}
	need := 0
	for _, v := range jg.Vertices {
		need = max(need, v.Parallelism)
	}
	tms := max(cfg.TaskManagers, 1)
	slots := cfg.SlotsPerTaskManager
	if slots <= 0 {
		slots = (need + tms - 1) / tms
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if shared == nil && tms*slots < need {
		// No TaskManager can join the embedded cluster: waiting for slots
		// (slot.request.timeout) could not help.
		return nil, fmt.Errorf("weir: not enough task slots: the job needs %d (its largest parallelism), the local cluster has %d (Config.TaskManagers %d x Config.SlotsPerTaskManager %d); "+
			"raise them, or leave SlotsPerTaskManager 0 to size it to the job", need, tms*slots, tms, slots)
	}
	if cfg.SlotRequestTimeout < 0 {
		return nil, fmt.Errorf("weir: Config.SlotRequestTimeout is %v: want a positive duration, or 0 for the default (slot.request.timeout, %v)", cfg.SlotRequestTimeout, jobmanager.DefaultSlotRequestTimeout)
	}
	if cfg.HeapStateMemory < 0 {
		return nil, fmt.Errorf("weir: Config.HeapStateMemory is %d bytes: want a positive number, or 0 for the default", cfg.HeapStateMemory)
	}
	var c *cluster.Local
	drop := func() {} // a shared cluster outlives the job
	if shared != nil {
		c = shared.c
	} else {
		var err error
		c, err = cluster.Start(cluster.Config{TaskManagers: tms, SlotsPerTaskManager: slots, NetworkMemory: cfg.NetworkMemory,
			HeapStateMemory: cfg.HeapStateMemory, RESTAddr: cfg.RESTAddr, RESTPortFallback: cfg.RESTPortFallback, Version: Version, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("weir: %w", err)
		}
		drop = func() { c.Close(context.Background()) }
	}
	mode := operator.Streaming
	if cfg.Batch {
		mode = operator.Batch
	}
	switch cfg.StateBackend {
	case "", "hashmap", "pebble":
	default:
		drop()
		return nil, fmt.Errorf("weir: unknown state backend %q (want hashmap or pebble)", cfg.StateBackend)
	}
	id := rest.NewJobID()
	var fencing *jobmanager.Fencing
	if shared != nil {
		if shared.sub.JobID != "" {
			id = shared.sub.JobID
		}
		if shared.sub.ResumeFrom != "" {
			cfg.ResumeFrom = shared.sub.ResumeFrom
		}
		fencing = shared.sub.Fencing
	}
	spec, tmJob, res, err := jobSpecs(ctx, cfg, id, jg, mode, c.RESTAddr(), fencing)
	if err != nil {
		drop()
		return nil, fmt.Errorf("weir: job %q: %w", name, err)
	}
	var probe, token string
	if shared != nil {
		if probe, token, err = shareStorage(ctx, spec, res, cfg.CollectSinks); err != nil {
			drop()
			res.close()
			return nil, fmt.Errorf("weir: job %q: %w", name, err)
		}
	}
	if cfg.MaxParallelism == 0 && spec.Restore != nil {
		if err := checkRestoredMaxParallelism(spec.Restore, jg); err != nil {
			drop()
			res.close()
			return nil, fmt.Errorf("weir: job %q: %w", name, err)
		}
		if mp := adoptedMaxParallelism(spec.Restore, jg); mp != 0 {
			// Flink's rule: a max parallelism the user did not set is
			// taken from the savepoint, so that a job resumed at a larger
			// parallelism (whose derived default would be larger) keeps
			// its key groups.
			sg := cfg.Stream
			sg.JobName, sg.MaxParallelism = name, mp
			if jg, err = graph.Compile(&sg); err != nil {
				drop()
				res.close()
				return nil, fmt.Errorf("weir: job %q: %w", name, err)
			}
			spec.Graph, tmJob.Graph = jg, jg
		}
	}
	stateDir, removeDir := cfg.StateDir, func() {}
	if stateDir == "" {
		// Locked while this process lives, so a later job on this machine
		// removes it if this process is killed (kill -9 runs no defer).
		if stateDir, removeDir, err = scratch.Dir("weir-state-", id[:8]+"-"); err != nil {
			drop()
			res.close()
			return nil, fmt.Errorf("weir: creating a state directory: %w", err)
		}
	} else {
		stateDir = filepath.Join(stateDir, id)
	}
	tmJob.StateDir = stateDir
	c.Jobs.Add(tmJob)
	spec.Register = registration(tmJob, writeMemory(cfg))
	if shared != nil {
		spec.Register.Program, spec.Register.Args = shared.sub.Program, shared.sub.Args
		if c := spec.Register.Checkpoints; c != nil {
			c.Probe, c.ProbeToken = probe, token
		}
	}
	j := &Job{id: spec.ID, c: c, started: time.Now(), done: make(chan struct{}), restoredFrom: spec.Restore}
	if spec.RestoreStore != nil {
		j.restoredURL = spec.RestoreStore.URL()
	}
	if err := c.JM.Submit(spec); err != nil {
		drop()
		res.close()
		removeDir()
		return nil, fmt.Errorf("weir: job %q: %w", name, err)
	}
	endMemory := guardMemory(cfg, spec.ID, func(err error) { c.JM.Fail(spec.ID, err) })
	if shared != nil && shared.sub.Submitted != nil {
		shared.sub.Submitted(spec.ID)
	}
	if cfg.OnSubmit != nil {
		cfg.OnSubmit(j)
	}
	res.keepLease(func(err error) { c.JM.Fail(spec.ID, err) })
	go func() {
		jmDone := c.JM.Done(spec.ID)
		select {
		case <-jmDone:
		case <-ctx.Done():
			c.JM.Cancel(spec.ID)
			<-jmDone
		}
		status, f, _ := c.JM.WaitFailure(context.Background(), spec.ID)
		j.status = status
		var err error
		if f != nil {
			err = f.Err
			// In one process the task's own error is at hand: keep it, so
			// callers can match the user's error with errors.Is and As.
			if f.Exec != nil {
				if te := c.TaskError(*f.Exec); te != nil && strings.HasPrefix(f.Err.Error(), te.Error()) {
					err = fmt.Errorf("%w%s", te, strings.TrimPrefix(f.Err.Error(), te.Error()))
				}
			}
		}
		switch {
		case status == protocol.JobCanceled && ctx.Err() != nil:
			j.err = ctx.Err()
		case status == protocol.JobCanceled:
			j.err = cfg.Canceled
		case err != nil && f.Stack != "":
			// A panic: where it happened, the user's frames first.
			j.err = fmt.Errorf("weir: job %q (%s) failed: %w\n%s", name, spec.ID, err, f.Stack)
		case err != nil:
			j.err = fmt.Errorf("weir: job %q (%s) failed: %w", name, spec.ID, err)
		}
		// A stop-with-savepoint ends the job, and with it this cluster's
		// REST API: let whoever stopped it read the savepoint's location
		// first (bounded, so nobody polling cannot hold the process).
		c.JM.AwaitSavepointPolls(spec.ID, savepointPollGrace)
		if st, ok := c.JM.Checkpoints(spec.ID); ok {
			j.checkpoints = st.Counts.Completed
		}
		drop()
		c.Jobs.Remove(spec.ID)
		c.JM.Drain(spec.ID)
		endMemory()
		res.close()
		removeDir()
		if cfg.OnEnd != nil {
			cfg.OnEnd()
		}
		close(j.done)
	}()
	return j, nil
}
