package sink

import (
	"time"

	"github.com/weirhq/weir/codec"
)

// Context describes a sink subtask.
type Context interface {
	Subtask() int
	Parallelism() int
	// Attempt counts restarts of the job (0 for the first run).
	Attempt() int
	// Checkpointing reports whether the job takes checkpoints; without,
	// committables are committed at the end of input.
	Checkpointing() bool
	// CheckpointInterval is the interval between checkpoints (0 without
	// checkpointing): a sink whose pre-committed output must outlive a
	// checkpoint interval (a Kafka transaction) checks its timeouts with it.
	CheckpointInterval() time.Duration
	// RestoredCheckpoint is the id of the checkpoint or savepoint this run
	// restored from (0: a fresh start). Checkpoint ids of the run are above it.
	RestoredCheckpoint() int64
	// Lineage is an id shared by every run of a job that continues the
	// same line of checkpoints (a restart after a failure, a resume from
	// one of its checkpoints or savepoints); a fresh start gets a new one.
	// It is "" when the job takes no checkpoints. A sink that keeps state
	// in its output (the file sink's commit markers) ties it to the
	// lineage, so that two lines of runs never write one output.
	Lineage() string
	// Canceled is closed when the subtask is canceled: a writer that blocks
	// (on a full channel, a slow reader) must stop waiting then.
	Canceled() <-chan struct{}
}

// Writer writes the records of one sink subtask. Its methods run on the
// subtask's goroutine, never concurrently.
type Writer[T any] interface {
	// Write writes one record with its event timestamp (or math.MinInt64).
	Write(v T, ts int64) error
	// Flush pushes buffered records out: on the buffer timeout, at every
	// checkpoint barrier (before PrepareCommit) and at the end of input
	// (endOfInput true).
	Flush(endOfInput bool) error
	// Close releases resources, also after a failure.
	Close() error
}

// Sink creates a writer per subtask. Its output is at-least-once after
// failures unless it is idempotent; see TwoPhaseCommitting.
type Sink[T any] interface {
	CreateWriter(ctx Context) (Writer[T], error)
}

// CommittingWriter is the writer of a two-phase-commit sink.
type CommittingWriter[T, C any] interface {
	Writer[T]
	// PrepareCommit returns committables for everything written since the
	// last call, which must not be visible yet. It is called at every
	// checkpoint barrier after Flush, and at the end of input.
	PrepareCommit() ([]C, error)
}

// BarrierAware is implemented by a CommittingWriter that needs the id of
// the checkpoint it pre-commits for (the Kafka sink names each transaction
// after it): the runtime calls Barrier at every checkpoint barrier, before
// Flush and PrepareCommit. PrepareCommit at the end of input without
// checkpoints comes without a Barrier.
type BarrierAware interface {
	Barrier(checkpointID int64) error
}

// Committer makes committables visible.
type Committer[C any] interface {
	// Commit commits. It must be idempotent: after a restore it may get
	// committables it already committed.
	Commit(committables []C) error
	Close() error
}

// TwoPhaseCommitting is an exactly-once sink: what a checkpoint covers is
// committed when the checkpoint completes, and only then.
type TwoPhaseCommitting[T, C any] interface {
	CreateWriter(ctx Context) (CommittingWriter[T, C], error)
	CreateCommitter(ctx Context) (Committer[C], error)
	// CommittableCodec stores committables in checkpoints.
	CommittableCodec() codec.Codec[C]
}
