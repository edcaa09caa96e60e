package weir

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/memory"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/task"
	"github.com/weirhq/weir/internal/taskmanager"
)

// Version is Weir's version.
const Version = "0.1.0-dev"

// RuntimeMode says how a job runs (Flink's execution.runtime-mode).
type RuntimeMode int

const (
	// Streaming emits results continuously (the default).
	Streaming RuntimeMode = iota
	// Batch runs a job whose sources are all bounded as a batch job: keyed
	// aggregations emit one final result per key at the end of input.
	Batch
)

// Config configures an Environment. The zero value gives the defaults.
type Config struct {
	// Parallelism is the default parallelism of operators (default 1).
	Parallelism int
	// MaxParallelism is the number of key groups (Flink's
	// pipeline.max-parallelism; default: derived from the largest
	// parallelism, at least 128). It bounds the parallelism a checkpoint or
	// savepoint of the job can be resumed at, and is fixed when the job
	// first runs: a resume without it adopts the restored one.
	MaxParallelism int
	// BufferTimeout is the longest a partly filled network buffer waits
	// before it is sent (default 100ms; negative: only when full; 0: after
	// every batch of work).
	BufferTimeout time.Duration
	// AutoWatermarkInterval is how often watermark generators emit, in
	// processing time (Flink's pipeline.auto-watermark-interval; default
	// 200ms). A WatermarkStrategy's own Interval overrides it.
	AutoWatermarkInterval time.Duration
	// BufferSize is the size of network buffers (default 32 KiB).
	BufferSize int
	// BuffersPerChannel is the credit of each input channel (default 2);
	// FloatingBuffers the extra buffers of each result partition (default 8).
	BuffersPerChannel, FloatingBuffers int
	// ProcessMemory is the memory the whole process may use (Flink's
	// taskmanager.memory.process.size; weir run --process-memory). Default:
	// the memory cgroup's limit, else the machine's memory (0 after the
	// defaults: neither is known). While a job runs, the Go runtime's soft
	// memory limit is 90% of it; NetworkMemory and HeapStateMemory, when not
	// set, are 10% (at most 4 GiB) and 40% of it, and set ones that add up
	// to more than it are refused. A guard samples the Go heap every 100 ms
	// and fails the job, naming this setting, when the live heap (what the
	// last collection found reachable, including what state values point
	// to and the network buffers) plus goroutine stacks stays above 80% of
	// it over two collections: before the operating system kills the
	// process. docs/architecture.md says how it is divided.
	ProcessMemory int64
	// NetworkMemory bounds the bytes of network buffers each TaskManager's
	// result partitions hold at once (Flink's taskmanager.memory.network.max;
	// default 10% of ProcessMemory up to 4 GiB, or 4 GiB when that is
	// unknown). Buffers are allocated as data flows; every output
	// channel needs room for one, and a job whose channels need more fails
	// at deployment with a message saying how much it needs.
	NetworkMemory int64
	Mode          RuntimeMode
	// TaskManagers and SlotsPerTaskManager size the local cluster (defaults:
	// one TaskManager with as many slots as the job's largest parallelism).
	TaskManagers, SlotsPerTaskManager int
	// RESTAddr is where the local cluster serves its REST API ("": none).
	RESTAddr string
	// RESTPortFallback: when RESTAddr's port is taken (by another job, say),
	// serve on a free port instead of failing; Job.RESTAddr says which.
	RESTPortFallback bool
	// OnSubmit, if set, is called once the job is submitted, before it
	// runs, for example to print its ID and REST address.
	OnSubmit func(*Job)
	// OnCheckpoint, if set, is called when a checkpoint completes (final:
	// the one after which the job ends). It must return quickly.
	OnCheckpoint func(id int64, final bool)
	// OnRestart, if set, is called when the job restarts after a failure,
	// with the checkpoint it restores (0: from the beginning) and the cause.
	OnRestart func(attempt int, checkpoint int64, cause error)
	// StateBackend is where keyed state lives: "hashmap" (default: Go maps
	// on the heap) or "pebble" (an LSM tree on local disk, for state larger
	// than memory), as Flink's state.backend.type.
	StateBackend string
	// StateDir is the working directory of on-disk state (default: a new
	// directory under the system's temporary directory, removed at the end).
	StateDir string
	// Logger receives the engine's logs (default: warnings and errors, as
	// text on standard error: a task's failure and the restart that follows
	// it, a failed checkpoint, so a job that keeps restarting says why;
	// slog.New(slog.DiscardHandler) silences them).
	Logger *slog.Logger
	// WindowSliceCache bounds, per window operator subtask, the slice
	// accumulators that tumbling and sliding windows keep in memory to
	// merge a window's slices in O(1) (default 1<<20; negative: none, every
	// firing merges its slices from state). Past it, windows of further keys
	// merge from state; the first time, an Info log names this setting.
	WindowSliceCache int
	// BatchStateMemory bounds, per subtask, the memory of a batch-mode
	// keyed Reduce's accumulators (Mode Batch; default 1 GiB), counted for
	// each distinct key as the sizes of its key and value (and a string
	// key's bytes) plus 32 bytes of table; memory that values point to is
	// not counted. A subtask past it fails, naming this setting: for more
	// keys than memory holds, run the job in streaming mode on the pebble
	// state backend.
	BatchStateMemory int64
	// HeapStateMemory bounds, per TaskManager, the memory of the hashmap
	// state backend's keyed state, counted as it grows: the tables' slots,
	// which hold the keys and the values themselves, what values point to
	// (strings, slices, list elements, map state's maps, long keys), and
	// what a running checkpoint still holds after a write copied it, and
	// the keyed operators' timers (default: 40% of ProcessMemory, or
	// DefaultHeapStateMemory where that is unknown). With the pebble
	// backend, timers are not counted here; the ProcessMemory guard counts
	// them, in the live heap. A
	// growth past it fails the job, naming this setting, without a restart
	// (one would restore the state that grew past it): for state larger
	// than memory, use the pebble backend.
	HeapStateMemory int64
	// Clock is processing time (default: the system clock).
	Clock clock.Clock
	// Checkpointing turns on checkpoints (nil: none). A streaming job takes
	// savepoints either way, as in Flink: without checkpointing, its tasks
	// stage a savepoint's files in a temporary directory (under the
	// system's temporary directory, removed when the job ends) before the
	// JobManager copies them into the savepoint's folder.
	Checkpointing *CheckpointConfig
	// SavepointDir is the default target directory of savepoints
	// (state.savepoints.dir), with or without checkpointing: a path or
	// URL as CheckpointConfig.Dir; "" makes every savepoint request name
	// its own. CheckpointConfig.SavepointDir, if set, takes precedence.
	SavepointDir string
	// Restart configures the restart strategy with Flink's keys
	// (restart-strategy.type and its restart-strategy.* settings); empty:
	// exponential-delay with checkpointing, none without.
	Restart map[string]string
	// ResumeFrom starts the job from a checkpoint or savepoint: "latest"
	// (the newest complete checkpoint of a job of the same name in the
	// checkpoint directory, or a savepoint such a job took if that is newer,
	// as a stop's is; none: from the beginning) or a snapshot's path. The run
	// continues the snapshot's lineage (docs/checkpoints.md, 13-15).
	ResumeFrom string
	// AllowNonRestoredState lets a job resume from a checkpoint or savepoint
	// that holds state of operators the job no longer has: that state is
	// skipped (a Warn log line names each operator). Without it such a
	// resume fails, naming the operator (Flink's --allowNonRestoredState).
	AllowNonRestoredState bool
}

func (c Config) withDefaults() Config {
	if c.Parallelism <= 0 {
		c.Parallelism = 1
	}
	if c.BufferTimeout == 0 {
		c.BufferTimeout = 100 * time.Millisecond
	}
	if c.BufferSize <= 0 {
		c.BufferSize = 32 << 10
	}
	if c.AutoWatermarkInterval <= 0 {
		c.AutoWatermarkInterval = 200 * time.Millisecond
	}
	if c.BuffersPerChannel <= 0 {
		c.BuffersPerChannel = 2
	}
	if c.FloatingBuffers <= 0 {
		c.FloatingBuffers = 8
	}
	// NewEnvironment has put the detected ProcessMemory in place of 0.
	if c.ProcessMemory > 0 && c.NetworkMemory == 0 {
		c.NetworkMemory = memory.NetworkDefault(c.ProcessMemory)
	}
	if c.HeapStateMemory == 0 {
		c.HeapStateMemory = DefaultHeapStateMemory
		if c.ProcessMemory > 0 {
			c.HeapStateMemory = memory.HeapStateDefault(c.ProcessMemory)
		}
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return c
}

// DefaultHeapStateMemory is Config.HeapStateMemory's default where the
// machine's memory is unknown.
const DefaultHeapStateMemory = 8 << 30

// Environment is where a job is declared and from where it is executed.
type Environment struct {
	cfg      Config
	sg       graph.StreamGraph
	collects []collectSink
	err      error // first declaration error; reported by Execute
	// memoryFrom says where cfg.ProcessMemory came from (for the log).
	memoryFrom string
}

// NewEnvironment returns an environment with the given configuration.
func NewEnvironment(cfg Config) *Environment {
	given := cfg
	from := "Config.ProcessMemory (--process-memory)"
	if cfg.ProcessMemory == 0 {
		sz := memory.Detect()
		cfg.ProcessMemory, from = sz.Bytes, sz.From
	}
	cfg = cfg.withDefaults()
	e := &Environment{cfg: cfg, memoryFrom: from, sg: graph.StreamGraph{DefaultParallelism: cfg.Parallelism, MaxParallelism: cfg.MaxParallelism}}
	if err := checkMemory(given, cfg); err != nil {
		e.fail(err)
	}
	return e
}

// checkMemory refuses a negative ProcessMemory, and network and heap state
// memory, one of them set, that add up to more than the process memory.
func checkMemory(given, cfg Config) error {
	if cfg.ProcessMemory < 0 {
		return fmt.Errorf("weir: Config.ProcessMemory is %d bytes: want a positive number, or 0 for the default (the cgroup's limit or the machine's memory)", cfg.ProcessMemory)
	}
	if cfg.ProcessMemory == 0 || (given.NetworkMemory <= 0 && given.HeapStateMemory <= 0) || cfg.NetworkMemory <= 0 || cfg.HeapStateMemory <= 0 {
		return nil
	}
	if sum := cfg.NetworkMemory + cfg.HeapStateMemory; sum > cfg.ProcessMemory {
		return fmt.Errorf("weir: network memory %d bytes (Config.NetworkMemory, --network-memory) plus heap state memory %d bytes "+
			"(Config.HeapStateMemory, --heap-state-memory) is %d bytes, more than the process memory of %d bytes "+
			"(Config.ProcessMemory, --process-memory): lower them, or raise the process memory",
			cfg.NetworkMemory, cfg.HeapStateMemory, sum, cfg.ProcessMemory)
	}
	return nil
}

// Config returns the environment's configuration with defaults applied.
func (e *Environment) Config() Config { return e.cfg }

func (e *Environment) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// jobGraph compiles what was declared so far.
func (e *Environment) jobGraph(name string) (*graph.JobGraph, error) {
	if e.err != nil {
		return nil, e.err
	}
	hasSink := false
	for _, n := range e.sg.Nodes {
		hasSink = hasSink || n.IsSink
	}
	if !hasSink {
		return nil, errors.New("weir: the job has no sink; add one (Print, WriteText, Discard, Collect, SinkTo)")
	}
	sg := e.sg
	sg.JobName = name
	jg, err := graph.Compile(&sg)
	if err != nil {
		return nil, err
	}
	for _, v := range jg.Vertices {
		for _, n := range v.Nodes {
			if n.Validate == nil {
				continue
			}
			if err := n.Validate(v.Parallelism); err != nil {
				return nil, fmt.Errorf("weir: %s: %w", n.Name, err)
			}
		}
	}
	return jg, nil
}

// JobResult describes a finished job.
type JobResult struct {
	ID       string
	Status   string
	Duration time.Duration
	// Checkpoints is how many checkpoints completed (savepoints and the
	// final checkpoint at the end of bounded input included); 0 without
	// checkpointing.
	Checkpoints int64
}

// Job is a job running on the local cluster.
type Job struct {
	id           string
	c            *cluster.Local
	started      time.Time
	done         chan struct{}
	status       protocol.JobState
	err          error
	restoredFrom *storage.Metadata
	restoredURL  string // the store restoredFrom was read from
	checkpoints  int64  // completed, read as the job ended
}

// RestoredFrom describes the checkpoint the job started from ("" for a fresh
// start): its id and where it is.
func (j *Job) RestoredFrom() string {
	m := j.restoredFrom
	if m == nil {
		return ""
	}
	if m.Savepoint {
		return fmt.Sprintf("savepoint %d of job %s (%s)", m.CheckpointID, m.JobID, j.restoredURL)
	}
	return fmt.Sprintf("checkpoint %d of job %s", m.CheckpointID, m.JobID)
}

// ID is the job's 32-hex-digit ID.
func (j *Job) ID() string { return j.id }

// RESTAddr is the address of the cluster's REST API, or "".
func (j *Job) RESTAddr() string { return j.c.RESTAddr() }

// Done is closed when the job has ended and the cluster has shut down.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel asks the job to cancel; Wait returns once it has.
func (j *Job) Cancel() error { return j.c.JM.Cancel(j.id) }

// Wait waits for the job to end. It returns an error for a job that failed
// (naming the operator and subtask) or was canceled, or when ctx ends first.
func (j *Job) Wait(ctx context.Context) (*JobResult, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &JobResult{ID: j.id, Status: string(j.status), Duration: time.Since(j.started), Checkpoints: j.checkpoints}
	return res, j.err
}

// ErrCanceled is returned by Wait for a job that was canceled.
var ErrCanceled = errors.New("the job was canceled")

// NetworkBuffers reports the job's network memory in bytes while it runs:
// the most that was ever out of its buffer pools at once (summed over
// pools), what the pools have allocated so far (memory follows the data in
// flight), and what they may grow to. maxInUse never exceeds capacity: that
// is the bound on buffered data.
func (j *Job) NetworkBuffers() (maxInUse, allocated, capacity int64) {
	for _, p := range j.c.Shuffle.Pools(j.id) {
		size := int64(p.BufferSize())
		maxInUse += int64(p.MaxInUse()) * size
		allocated += int64(p.Allocated()) * size
		capacity += int64(p.Capacity()) * size
	}
	return maxInUse, allocated, capacity
}

// ExecuteAsync starts the job on a new embedded local cluster and returns at
// once. Canceling ctx cancels the job. The cluster shuts down when the job ends.
func (e *Environment) ExecuteAsync(ctx context.Context, name string) (*Job, error) {
	// The job's Collect sinks learn of its end, or of its failure to start,
	// so that their readers never wait for a job that does not run.
	collects := slices.Clone(e.collects)
	for _, cs := range collects {
		cs.begin()
	}
	j, err := e.executeAsync(ctx, name, collects)
	if err != nil {
		for _, cs := range collects {
			cs.end()
		}
	}
	return j, err
}

func (e *Environment) executeAsync(ctx context.Context, name string, collects []collectSink) (*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	jg, err := e.jobGraph(name)
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	if cfg.Checkpointing != nil || cfg.ResumeFrom != "" {
		warnMissingUIDs(cfg.Logger, name, e.sg.Nodes)
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
	if cfg.HeapStateMemory < 0 {
		return nil, fmt.Errorf("weir: Config.HeapStateMemory is %d bytes: want a positive number, or 0 for the default", cfg.HeapStateMemory)
	}
	c, err := cluster.Start(cluster.Config{TaskManagers: tms, SlotsPerTaskManager: slots, NetworkMemory: cfg.NetworkMemory,
		HeapStateMemory: cfg.HeapStateMemory, RESTAddr: cfg.RESTAddr, RESTPortFallback: cfg.RESTPortFallback, Version: Version, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("weir: %w", err)
	}
	mode := operator.Streaming
	if cfg.Mode == Batch {
		mode = operator.Batch
	}
	switch cfg.StateBackend {
	case "", "hashmap", "pebble":
	default:
		c.Close(context.Background())
		return nil, fmt.Errorf("weir: unknown state backend %q (want hashmap or pebble)", cfg.StateBackend)
	}
	id := rest.NewJobID()
	spec, tmJob, res, err := e.jobSpecs(ctx, id, name, jg, mode, c.RESTAddr())
	if err != nil {
		c.Close(context.Background())
		return nil, fmt.Errorf("weir: job %q: %w", name, err)
	}
	if cfg.MaxParallelism == 0 && spec.Restore != nil {
		if err := checkRestoredMaxParallelism(spec.Restore, jg); err != nil {
			c.Close(context.Background())
			res.close()
			return nil, fmt.Errorf("weir: job %q: %w", name, err)
		}
		if mp := adoptedMaxParallelism(spec.Restore, jg); mp != 0 {
			// Flink's rule: a max parallelism the user did not set is
			// taken from the savepoint, so that a job resumed at a larger
			// parallelism (whose derived default would be larger) keeps
			// its key groups.
			sg := e.sg
			sg.JobName, sg.MaxParallelism = name, mp
			if jg, err = graph.Compile(&sg); err != nil {
				c.Close(context.Background())
				res.close()
				return nil, fmt.Errorf("weir: job %q: %w", name, err)
			}
			spec.Graph, tmJob.Graph = jg, jg
		}
	}
	stateDir, removeDir := cfg.StateDir, false
	if stateDir == "" {
		if stateDir, err = os.MkdirTemp("", "weir-state-"+id[:8]+"-"); err != nil {
			c.Close(context.Background())
			res.close()
			return nil, fmt.Errorf("weir: creating a state directory: %w", err)
		}
		removeDir = true
	} else {
		stateDir = filepath.Join(stateDir, id)
	}
	tmJob.StateDir = stateDir
	c.RegisterJob(tmJob)
	j := &Job{id: spec.ID, c: c, started: time.Now(), done: make(chan struct{}), restoredFrom: spec.Restore}
	if spec.RestoreStore != nil {
		j.restoredURL = spec.RestoreStore.URL()
	}
	if err := c.JM.Submit(spec); err != nil {
		c.Close(context.Background())
		res.close()
		if removeDir {
			os.RemoveAll(stateDir)
		}
		return nil, fmt.Errorf("weir: job %q: %w", name, err)
	}
	endMemory := e.guardMemory(spec.ID, func(err error) { c.JM.Fail(spec.ID, err) })
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
			j.err = ErrCanceled
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
		c.Close(context.Background())
		c.JM.Drain(spec.ID)
		endMemory()
		res.close()
		if removeDir {
			os.RemoveAll(stateDir)
		}
		for _, cs := range collects {
			cs.end()
		}
		close(j.done)
	}()
	return j, nil
}

// guardMemory, for a known ProcessMemory, lowers the Go runtime's soft
// limit to its share and starts the guard that fails the job (permanently:
// a restart would rebuild the same heap) when the live heap stays above
// its bound; the returned function stops the guard and restores the limit.
// It logs what was chosen and from where.
func (e *Environment) guardMemory(job string, fail func(error)) (end func()) {
	cfg := e.cfg
	p := cfg.ProcessMemory
	if p <= 0 {
		cfg.Logger.Info("process memory unknown (no cgroup limit, no /proc/meminfo; set Config.ProcessMemory or --process-memory): no soft limit, no memory guard",
			"job", job, "network_memory", cfg.NetworkMemory, "heap_state_memory", cfg.HeapStateMemory)
		return func() {}
	}
	cfg.Logger.Info("process memory", "job", job, "bytes", p, "from", e.memoryFrom,
		"go_soft_limit", memory.SoftLimit(p), "guard_live_heap_bound", memory.GuardBound(p),
		"network_memory", cfg.NetworkMemory, "heap_state_memory", cfg.HeapStateMemory)
	restore := memory.SetSoftLimit(memory.SoftLimit(p))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w := &memory.Watch{Bound: memory.GuardBound(p)}
		memory.Run(stop, memory.Interval, w, memory.NewReader().Read, func(s memory.Sample) {
			cfg.Logger.Warn("memory guard: failing the job", "job", job, "live_heap", s.LiveHeap, "stacks", s.Stacks,
				"gc_cycles", s.Cycles, "bound", w.Bound, "process_memory", p)
			fail(failure.Permanent(memory.ExceededError(s, p, "Config.ProcessMemory, weir run --process-memory")))
		})
	}()
	return func() {
		close(stop)
		<-done
		restore()
	}
}

// savepointPollGrace bounds how long an ended job's embedded cluster keeps
// serving until a completed stop-with-savepoint request has been polled.
const savepointPollGrace = 5 * time.Second

// Execute runs the job on an embedded local cluster and waits for it to end.
func (e *Environment) Execute(ctx context.Context, name string) (*JobResult, error) {
	j, err := e.ExecuteAsync(ctx, name)
	if err != nil {
		return nil, err
	}
	<-j.done
	return j.Wait(context.Background())
}

// jobSpecs builds what the JobManager and the TaskManagers need to run the
// job: network sizes, checkpointing, the restart strategy and the
// checkpoint to resume from. With checkpointing it takes the lineage lease
// of the job's name in the checkpoint storage first, so that two runs never
// resume one lineage at once. res.close releases what it holds (also on
// error).
func (e *Environment) jobSpecs(ctx context.Context, id, name string, jg *graph.JobGraph, mode operator.Mode, restAddr string) (_ *jobmanager.JobSpec, _ *taskmanager.Job, res *jobResources, _ error) {
	cfg := e.cfg
	res = &jobResources{}
	spec := &jobmanager.JobSpec{ID: id, Name: name, Graph: jg, Clock: cfg.Clock, OnCheckpoint: cfg.OnCheckpoint, OnRestart: cfg.OnRestart,
		StateBackend: cfg.StateBackend,
		Network:      jobmanager.NetworkConfig{BufferSize: cfg.BufferSize, BuffersPerChannel: cfg.BuffersPerChannel, FloatingBuffers: cfg.FloatingBuffers}}
	tmJob := &taskmanager.Job{ID: id, Graph: jg, Mode: mode, BufferTimeout: cfg.BufferTimeout, BufferSize: cfg.BufferSize,
		BuffersPerChannel: cfg.BuffersPerChannel, FloatingBuffers: cfg.FloatingBuffers, Clock: cfg.Clock, StateBackend: cfg.StateBackend}
	var store *storage.Store
	if cp := cfg.Checkpointing; cp != nil {
		settings := cp.settings()
		if err := settings.Validate(); err != nil {
			return nil, nil, res, err
		}
		dir := cp.Dir
		if dir == "" {
			dir = defaultCheckpointDir()
		}
		var err error
		if store, err = storage.Open(ctx, dir); err != nil {
			return nil, nil, res, fmt.Errorf("opening the checkpoint storage: %w", err)
		}
		res.stores = append(res.stores, store)
		mem := cp.WriteMemory
		if mem == 0 {
			mem = DefaultCheckpointWriteMemory
		}
		if mem < 0 {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.WriteMemory is %d bytes: want a positive number, or 0 for the default (%d)", mem, DefaultCheckpointWriteMemory)
		}
		if err := store.LimitWriteMemory(mem); err != nil {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.WriteMemory: %w", err)
		}
		spDir := cp.SavepointDir
		if spDir == "" {
			spDir = cfg.SavepointDir
		}
		info := storage.LocalProcess(storage.LeaseInfo{Owner: id, REST: restAddr})
		if res.lease, err = storage.AcquireLease(ctx, store, name, info, cp.LeaseTimeout, nil); err != nil {
			return nil, nil, res, err
		}
		spec.Checkpoints = &jobmanager.CheckpointSpec{Settings: settings, Store: store, SavepointDir: spDir, Fence: res.lease.Check}
		csm := cp.ChannelStateMemory
		if csm == 0 {
			csm = DefaultChannelStateMemory
		}
		if csm < 0 {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.ChannelStateMemory is %d bytes: want a positive number, or 0 for the default (%d)", csm, DefaultChannelStateMemory)
		}
		tmJob.Checkpoints = &task.Checkpoints{Store: store, Mode: cp.barrierMode(), Incremental: cp.Incremental,
			Interval: time.Duration(settings.Interval) * time.Millisecond, ChannelStateMemory: csm}
	} else if mode == operator.Streaming {
		staging, remove, err := savepointStaging(ctx, id)
		if err != nil {
			return nil, nil, res, err
		}
		res.stores = append(res.stores, staging)
		res.after = append(res.after, remove)
		spec.Checkpoints = &jobmanager.CheckpointSpec{Settings: coordinator.Settings{}.WithDefaults(), Store: staging,
			SavepointDir: cfg.SavepointDir, SavepointsOnly: true}
		tmJob.Checkpoints = &task.Checkpoints{Store: staging, Mode: barrier.ExactlyOnce, SavepointsOnly: true}
	}
	rc, err := restartConfig(cfg.Restart, cfg.Checkpointing != nil)
	if err != nil {
		return nil, nil, res, err
	}
	spec.Restart = rc
	spec.Lineage = id // a fresh start begins a lineage
	if cfg.ResumeFrom != "" {
		m, s, err := resumePoint(ctx, cfg.ResumeFrom, store, name, cfg)
		if err != nil {
			return nil, nil, res, err
		}
		if s != nil && s != store {
			res.stores = append(res.stores, s)
		}
		spec.Restore, spec.RestoreStore = m, s
		if m != nil {
			spec.Lineage = m.LineageOf()
		}
		spec.AllowNonRestoredState = cfg.AllowNonRestoredState
		if spec.Checkpoints != nil {
			// A resumed run continues its lineage: the earlier runs'
			// checkpoints count towards Retained, and what they no
			// longer need goes (jobmanager's storage hygiene).
			spec.Checkpoints.ContinueLineage = true
		}
	}
	if cfg.Checkpointing != nil {
		// Without checkpoints (savepoints only) sinks keep no lineage:
		// sink.Context.Lineage is "" then.
		tmJob.Checkpoints.Lineage = spec.Lineage
	}
	return spec, tmJob, res, nil
}

// jobResources are what a run holds besides its cluster: the stores it
// opened and its lineage lease.
type jobResources struct {
	stores      []*storage.Store
	lease       *storage.Lease
	stopKeeping context.CancelFunc
	kept        chan struct{} // closed when Keep returned
	after       []func()      // run last, after the stores are closed
}

// keepLease renews the lease until close, calling lost if another run takes
// it.
func (r *jobResources) keepLease(lost func(error)) {
	if r.lease == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	r.stopKeeping, r.kept = stop, make(chan struct{})
	go func() {
		defer close(r.kept)
		r.lease.Keep(ctx, lost)
	}()
}

// close stops renewing and releases the lease, closes the stores, then
// runs after.
func (r *jobResources) close() {
	if r.stopKeeping != nil {
		r.stopKeeping()
		<-r.kept // a heartbeat in flight must not overwrite the release
	}
	if r.lease != nil {
		_ = r.lease.Release(context.Background())
	}
	for _, s := range r.stores {
		s.Close()
	}
	for _, f := range r.after {
		f()
	}
}

// warnMissingUIDs logs one warning listing the operators that may hold state
// (sources, keyed operators) and have no UID. Their state is matched on
// restore by a stable ID derived from their name and inputs, so a change of
// the graph upstream of them (or of their name) orphans it; Flink gives the
// same advice (set uid on every stateful operator). Other operators can
// hold state too (a sink's pending commits, broadcast state), but the graph
// cannot tell, so they are not listed.
func warnMissingUIDs(logger *slog.Logger, job string, nodes []*graph.Node) {
	var missing []string
	for _, n := range nodes {
		if n.UID != "" {
			continue
		}
		switch {
		case n.IsSource || n.Coordinator != nil:
			missing = append(missing, fmt.Sprintf("%q (source)", n.Name))
		case slices.ContainsFunc(n.Inputs, func(e graph.Edge) bool { return e.Partition == graph.Hash }):
			missing = append(missing, fmt.Sprintf("%q (keyed)", n.Name))
		}
	}
	if len(missing) == 0 {
		return
	}
	logger.Warn("stateful operators without a UID: their checkpoints and savepoints will not restore after a change of the job graph "+
		"that changes their names or inputs; set a UID on the stream each returns, sources too (DataStream.UID: weir.Generate(...).UID(\"payments\"))",
		"job", job, "operators", strings.Join(missing, ", "))
}

// adoptedMaxParallelism returns the max parallelism to adopt from the
// restored checkpoint m when the job did not set one: the one its keyed
// operators had, when they agree, it differs from jg's derived default and
// every default-max-parallelism vertex's parallelism fits under it; else 0.
// Operators that set their own max parallelism keep it (and are checked
// against the checkpoint when the restore is planned).
func adoptedMaxParallelism(m *storage.Metadata, jg *graph.JobGraph) int {
	mp := restoredMaxParallelism(m)
	if mp == 0 || mp == jg.MaxParallelism || aboveMaxParallelism(jg, mp) != nil {
		return 0
	}
	return mp
}

// restoredMaxParallelism is the max parallelism of m's keyed operators
// when they agree; else 0.
func restoredMaxParallelism(m *storage.Metadata) int {
	mp := 0
	for _, os := range m.Operators {
		if !os.HasKeyed() {
			continue
		}
		if mp != 0 && os.MaxParallelism != mp {
			return 0
		}
		mp = os.MaxParallelism
	}
	return mp
}

// aboveMaxParallelism returns a vertex of jg that takes the job's max
// parallelism (none of its operators sets its own) and runs at a
// parallelism above mp; nil if none does.
func aboveMaxParallelism(jg *graph.JobGraph, mp int) *graph.Vertex {
	for _, v := range jg.Vertices {
		defaulted := true
		for _, n := range v.Nodes {
			defaulted = defaulted && n.MaxParallelism == 0
		}
		if defaulted && v.Parallelism > mp {
			return v
		}
	}
	return nil
}

// checkRestoredMaxParallelism fails a resume whose parallelism is above the
// max parallelism that the restored keyed state was cut into: key groups
// cannot be split, so no subtask beyond the max parallelism could get any.
func checkRestoredMaxParallelism(m *storage.Metadata, jg *graph.JobGraph) error {
	mp := restoredMaxParallelism(m)
	if mp == 0 {
		return nil
	}
	v := aboveMaxParallelism(jg, mp)
	if v == nil {
		return nil
	}
	return fmt.Errorf("%q runs at parallelism %d, above the max parallelism %d of checkpoint %d "+
		"(its keyed state is cut into %d key groups, fixed when the job first ran): resume at a parallelism of at most %d; "+
		"a job meant to scale further must first run with a larger max parallelism "+
		"(--max-parallelism of weir run, Flink's pipeline.max-parallelism, Config.MaxParallelism)",
		v.Nodes[0].Name, v.Parallelism, mp, m.CheckpointID, mp, mp)
}
