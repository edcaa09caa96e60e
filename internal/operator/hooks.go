package operator

import "time"

// The hooks below let operators take part in checkpoints. The task calls
// them on its goroutine: InitializeState after it created and restored the
// operator's state and before Open; SnapshotState at a checkpoint barrier,
// before it snapshots the operator's state stores; the notifications when
// the JobManager says a checkpoint completed or was aborted.

// StateInitializer is implemented by operators that read state of their own
// from their operator state (or keyed state) before they open. restored is
// true when the task restored state from a checkpoint.
type StateInitializer interface {
	InitializeState(restored bool) error
}

// Snapshotter is implemented by operators with state of their own that is
// not in their state stores yet (a source reader's positions, a sink's
// pre-committed output): SnapshotState writes it into them.
type Snapshotter interface {
	SnapshotState(checkpointID int64) error
}

// CheckpointListener is implemented by operators that act when a checkpoint
// completes (commit what was pre-committed) or is aborted.
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
	NotifyCheckpointAborted(checkpointID int64)
}

// EventHandler is implemented by operators that receive events from their
// coordinator on the JobManager (a source reader's split assignments).
type EventHandler interface {
	HandleOperatorEvent(payload []byte) error
}

// Coordinator is the JobManager-side part of an operator (a source's split
// enumerator), type-erased. Its methods run on one goroutine at a time.
type Coordinator interface {
	// Start is called once, before any event.
	Start() error
	// HandleEvent handles an event from subtask i.
	HandleEvent(subtask int, payload []byte) error
	// SubtaskReset says that subtask i restarts (its reader registers again).
	SubtaskReset(subtask int)
	// Snapshot returns the coordinator's state for checkpoint id.
	Snapshot(checkpointID int64) ([]byte, error)
	Close() error
}

// CoordinatorContext is what a coordinator can do.
type CoordinatorContext interface {
	// SendEvent sends an event to subtask i of the operator. The payload
	// is delivered later, as is, on the subtask's goroutine: it must not be
	// written again.
	SendEvent(subtask int, payload []byte)
	Parallelism() int
	// Shared returns the object the job's coordinators share under key,
	// made by create on the first call (a watermark alignment group spans
	// the coordinators of several sources). The coordinators of a job run
	// one at a time, so it needs no lock; a restart makes new ones.
	Shared(key string, create func() any) any
}

// AsyncCoordinatorContext is implemented by coordinator contexts that run
// periodic work for a coordinator (source.AsyncCaller): fn off the
// coordinator's goroutine, handler on it (with the coordinator's other
// methods, never concurrently); an error from handler fails the job. The
// calls stop when the coordinator is closed or replaced.
type AsyncCoordinatorContext interface {
	CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration)
}

// CoordinatorFactory creates an operator's coordinator on the JobManager;
// restored is its state from a checkpoint, nil on a fresh start.
type CoordinatorFactory interface {
	CreateCoordinator(ctx CoordinatorContext, restored []byte) (Coordinator, error)
}

// InputStatusReceiver is implemented by operators with several inputs that
// combine their inputs' watermarks themselves (Flink's AbstractStreamOperator
// with its IndexedCombinedWatermarkStatus): the task tells them when an
// input as a whole (every live channel of it) goes idle or active again, so
// an idle input leaves their combined watermark. Operator inputs carry no
// status themselves (docs/windows.md, decision 10); this is the one place
// that needs it. The task calls it on its goroutine, for idle after the
// input's last watermark and for active before its next one, and then
// decides its own output status (idle when every input is).
type InputStatusReceiver interface {
	ProcessInputStatus(input int, idle bool)
}
