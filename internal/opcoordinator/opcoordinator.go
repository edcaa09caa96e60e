package opcoordinator

import "time"

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

// Context is what a coordinator can do.
type Context interface {
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

// AsyncContext is implemented by coordinator contexts that run
// periodic work for a coordinator (source.AsyncCaller): fn off the
// coordinator's goroutine, handler on it (with the coordinator's other
// methods, never concurrently); an error from handler fails the job. The
// calls stop when the coordinator is closed or replaced.
type AsyncContext interface {
	CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration)
}

// Factory creates an operator's coordinator on the JobManager;
// restored is its state from a checkpoint, nil on a fresh start.
type Factory interface {
	CreateCoordinator(ctx Context, restored []byte) (Coordinator, error)
}
