package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/launch"
	"github.com/weirhq/weir/internal/memory"
	"github.com/weirhq/weir/internal/operator"
)

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
	// FloatingBuffers the extra buffers of each result partition, and of
	// each input gate for its channels from other TaskManagers while their
	// producers' backlog exceeds their credit (Flink's
	// taskmanager.network.memory.floating-buffers-per-gate; default 8).
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
	// 8 GiB where that is unknown). With the pebble
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
	// SlotRequestTimeout is how long an attempt of the job (its first, or a
	// restart) waits for enough free task slots before it fails through the
	// restart strategy (Flink's slot.request.timeout; 0: 5 minutes). The
	// embedded cluster refuses a job it has too few slots for at once.
	SlotRequestTimeout time.Duration
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

	// Role makes this program one process of a cluster in application
	// mode (docs/deployment.md): started as the JobManager and as each
	// TaskManager, every process builds the same job, and the JobManager
	// alone supplies the arguments (a TaskManager re-executes itself with
	// them). Default: the environment variable WEIR_ROLE; empty runs the
	// job on an embedded cluster in this process.
	Role Role
	// JobManager is the application JobManager's RPC address: where it
	// listens, and where TaskManagers reach it; a TaskManager of an
	// application with high availability lists every JobManager ("a,b",
	// docs/deployment.md). Default: WEIR_JOBMANAGER, else 127.0.0.1:6123.
	JobManager string
}

// Role is a process's part in application mode (Config.Role).
type Role string

// The roles of application mode.
const (
	// RoleEmbedded runs the job on an embedded cluster in this process.
	RoleEmbedded Role = ""
	// RoleJobManager runs the JobManager: Execute serves the cluster's
	// control plane (Config.JobManager) and REST API (Config.RESTAddr),
	// runs the job on the TaskManagers that join, and returns when it
	// ends, after telling them.
	RoleJobManager Role = "jobmanager"
	// RoleTaskManager runs a TaskManager: Execute serves the JobManager's
	// job until it ends and returns its outcome. Its own settings come
	// from the environment (WEIR_TASKMANAGER_SLOTS, WEIR_TASKMANAGER_ID,
	// WEIR_TASKMANAGER_DATA_ADDRESS), since its arguments are the
	// JobManager's.
	RoleTaskManager Role = "taskmanager"
)

func (c Config) withDefaults() Config {
	if c.Role == "" {
		c.Role = Role(os.Getenv(launch.EnvRole))
	}
	if c.JobManager == "" {
		c.JobManager = os.Getenv(launch.EnvJobManager)
	}
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
		c.HeapStateMemory = defaultHeapStateMemory
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

// defaultHeapStateMemory is Config.HeapStateMemory's default where the
// machine's memory is unknown.
const defaultHeapStateMemory = 8 << 30

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

func (e *Environment) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// jobGraph compiles what was declared so far. With validate, the sinks'
// validators check the world (paths, connections); a TaskManager process
// that only builds the graph of a job its JobManager checked skips them:
// building a graph does no I/O.
func (e *Environment) jobGraph(name string, validate bool) (*graph.JobGraph, error) {
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
	// Elements cross every edge between vertices as bytes: a type whose
	// codec cannot be derived would fail each task that writes it, so it
	// is refused here, before anything runs (and permanently: a restart
	// rebuilds the same types).
	for _, e := range jg.Edges {
		if st, ok := e.FromNode.OutputType(e.Tag).(operator.StreamType); ok {
			if err := st.CodecErr(); err != nil {
				return nil, failure.Permanent(fmt.Errorf("weir: %s: its output crosses the network to %q and needs a codec: %w",
					e.FromNode.Name, e.ToNode.Name, err))
			}
		}
	}
	for _, v := range jg.Vertices {
		for _, n := range v.Nodes {
			if n.Validate == nil || !validate {
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
	l *launch.Job
}

// RestoredFrom describes the checkpoint the job started from ("" for a fresh
// start): its id and where it is.
func (j *Job) RestoredFrom() string { return j.l.RestoredFrom() }

// ID is the job's 32-hex-digit ID.
func (j *Job) ID() string { return j.l.ID() }

// RESTAddr is the address of the cluster's REST API, or "".
func (j *Job) RESTAddr() string { return j.l.RESTAddr() }

// Done is closed when the job has ended and the cluster has shut down.
func (j *Job) Done() <-chan struct{} { return j.l.Done() }

// Cancel asks the job to cancel; Wait returns once it has.
func (j *Job) Cancel() error { return j.l.Cancel() }

// Wait waits for the job to end. It returns an error for a job that failed
// (naming the operator and subtask) or was canceled, or when ctx ends first.
func (j *Job) Wait(ctx context.Context) (*JobResult, error) {
	r, err := j.l.Wait(ctx)
	if r == nil {
		return nil, err
	}
	return &JobResult{ID: r.ID, Status: r.Status, Duration: r.Duration, Checkpoints: r.Checkpoints}, err
}

// ErrCanceled is returned by Wait for a job that was canceled.
var ErrCanceled = errors.New("the job was canceled")

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
	jg, err := e.jobGraph(name, !launch.IsBuilding(ctx))
	if err != nil {
		return nil, err
	}
	j := &Job{}
	lc := e.launchConfig(name, jg)
	if on := e.cfg.OnSubmit; on != nil {
		lc.OnSubmit = func(l *launch.Job) { j.l = l; on(j) }
	}
	lc.OnEnd = func() {
		for _, cs := range collects {
			cs.end()
		}
	}
	l, err := launch.Start(ctx, lc)
	if err != nil {
		return nil, err
	}
	if j.l == nil {
		// OnSubmit did not set it. When it did, j may already be in the
		// hands of other goroutines: it is not written again.
		j.l = l
	}
	return j, nil
}

// launchConfig is what internal/launch needs to run the job: the
// configuration with its defaults, in plain values, and the graphs.
func (e *Environment) launchConfig(name string, jg *graph.JobGraph) launch.Config {
	cfg := e.cfg
	lc := launch.Config{Name: name, Graph: jg, Stream: e.sg, MaxParallelism: cfg.MaxParallelism, Batch: cfg.Mode == Batch,
		BufferTimeout: cfg.BufferTimeout, BufferSize: cfg.BufferSize, BuffersPerChannel: cfg.BuffersPerChannel, FloatingBuffers: cfg.FloatingBuffers,
		ProcessMemory: cfg.ProcessMemory, MemoryFrom: e.memoryFrom, NetworkMemory: cfg.NetworkMemory, HeapStateMemory: cfg.HeapStateMemory,
		TaskManagers: cfg.TaskManagers, SlotsPerTaskManager: cfg.SlotsPerTaskManager, RESTAddr: cfg.RESTAddr, RESTPortFallback: cfg.RESTPortFallback,
		StateBackend: cfg.StateBackend, StateDir: cfg.StateDir, Logger: cfg.Logger, Clock: cfg.Clock,
		SavepointDir: cfg.SavepointDir, Restart: cfg.Restart, SlotRequestTimeout: cfg.SlotRequestTimeout, ResumeFrom: cfg.ResumeFrom, AllowNonRestoredState: cfg.AllowNonRestoredState,
		OnCheckpoint: cfg.OnCheckpoint, OnRestart: cfg.OnRestart, Canceled: ErrCanceled, CollectSinks: len(e.collects),
		Role: string(cfg.Role), JobManager: cfg.JobManager}
	if cp := cfg.Checkpointing; cp != nil {
		lc.Checkpointing = &launch.Checkpointing{Interval: cp.Interval, Timeout: cp.Timeout, MinPause: cp.MinPause,
			MaxConcurrent: cp.MaxConcurrent, TolerableFailures: cp.TolerableFailures, AtLeastOnce: cp.Mode == AtLeastOnce,
			Unaligned: cp.Unaligned, AlignedTimeout: cp.AlignedTimeout, Retained: cp.Retained, Dir: cp.Dir, Incremental: cp.Incremental,
			SavepointDir: cp.SavepointDir, WriteMemory: cp.WriteMemory, LeaseTimeout: cp.LeaseTimeout, ChannelStateMemory: cp.ChannelStateMemory}
	}
	return lc
}

// Execute runs the job on an embedded local cluster and waits for it to end.
func (e *Environment) Execute(ctx context.Context, name string) (*JobResult, error) {
	j, err := e.ExecuteAsync(ctx, name)
	if err != nil {
		return nil, err
	}
	<-j.Done()
	return j.Wait(context.Background())
}
