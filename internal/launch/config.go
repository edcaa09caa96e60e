package launch

import (
	"log/slog"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
)

// Version is Weir's version: `weir version` prints it and the REST API
// reports it.
const Version = "0.1.0-dev"

// DefaultChannelStateMemory is Checkpointing.ChannelStateMemory's default.
const DefaultChannelStateMemory = 256 << 20

// DefaultCheckpointWriteMemory is Checkpointing.WriteMemory's default, and
// the write memory of a job's savepoint staging store.
const DefaultCheckpointWriteMemory = 64 << 20

// Config is what Start needs: weir.Config with its defaults applied, in
// plain values, and the job's graphs. The fields mean what weir.Config's
// fields of the same name mean.
type Config struct {
	// Name is the job's name; Graph the job graph compiled from Stream
	// (and checked). Stream is kept to warn about stateful operators
	// without a UID and to compile the graph again when a resume adopts
	// the restored max parallelism.
	Name   string
	Graph  *graph.JobGraph
	Stream graph.StreamGraph

	// MaxParallelism is weir.Config.MaxParallelism as the user set it
	// (0: derived, and adopted from a restored snapshot).
	MaxParallelism int
	// Batch runs the job in batch mode (weir.Batch).
	Batch bool

	BufferTimeout                      time.Duration
	BufferSize                         int
	BuffersPerChannel, FloatingBuffers int

	// ProcessMemory, after detection (0: unknown); MemoryFrom says where it
	// came from, for the log.
	ProcessMemory   int64
	MemoryFrom      string
	NetworkMemory   int64
	HeapStateMemory int64

	TaskManagers, SlotsPerTaskManager int
	RESTAddr                          string
	RESTPortFallback                  bool

	StateBackend string
	StateDir     string
	Logger       *slog.Logger
	Clock        clock.Clock

	// Checkpointing turns on checkpoints (nil: none; a streaming job then
	// takes savepoints only, staged in a temporary directory).
	Checkpointing *Checkpointing
	SavepointDir  string
	Restart       map[string]string
	// SlotRequestTimeout is slot.request.timeout (0: the default).
	SlotRequestTimeout time.Duration
	ResumeFrom         string
	// AllowNonRestoredState: see weir.Config.
	AllowNonRestoredState bool
	// Role is this process's role in application mode (RoleJobManager,
	// RoleTaskManager; "" for the embedded cluster), JobManager the
	// JobManager's RPC address ("": node.DefaultRPCAddress).
	Role, JobManager string
	// CollectSinks counts the job's Collect sinks, which hand elements to
	// a Go channel of this process: a multi-process cluster refuses them.
	CollectSinks int

	// OnSubmit is called once the job is submitted, before it runs.
	OnSubmit     func(*Job)
	OnCheckpoint func(id int64, final bool)
	OnRestart    func(attempt int, checkpoint int64, cause error)
	// OnEnd is called once the job has ended and everything it held is
	// released, just before Job.Done is closed.
	OnEnd func()
	// Canceled is the error Wait returns for a job canceled other than
	// through the context given to Start (weir.ErrCanceled).
	Canceled error
}

// Checkpointing is weir.CheckpointConfig in plain values; the fields mean
// what its fields of the same name mean.
type Checkpointing struct {
	Interval, Timeout, MinPause      time.Duration
	MaxConcurrent, TolerableFailures int
	AtLeastOnce                      bool
	Unaligned                        bool
	AlignedTimeout                   time.Duration
	Retained                         int
	Dir                              string
	Incremental                      bool
	SavepointDir                     string
	WriteMemory                      int64
	LeaseTimeout                     time.Duration
	ChannelStateMemory               int64
}
