package weir

import (
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/state"
)

// Collector receives the elements a function emits.
type Collector[T any] interface {
	Collect(v T)
}

// RuntimeContext describes the subtask a function runs in.
type RuntimeContext interface {
	// OperatorName is the operator's name; TaskName is "chain (i/n)".
	OperatorName() string
	TaskName() string
	// Subtask is the 0-based index of this subtask among Parallelism.
	Subtask() int
	Parallelism() int
	MaxParallelism() int
	// ProcessingTime is the current processing time in ms since the epoch.
	ProcessingTime() int64
	// Attempt counts the job's restarts (0 for the first run).
	Attempt() int
	// OperatorState is this operator subtask's non-keyed state: list state
	// (split evenly on rescale), union list state (every subtask gets all)
	// and broadcast state. It is kept in memory and checkpointed; after a
	// restore it holds what the checkpoint held (read it in Open).
	OperatorState() *state.OperatorStore
}

// Context is what a process function sees for the element being processed.
type Context interface {
	RuntimeContext
	// Timestamp is the element's event timestamp, or NoTimestamp.
	Timestamp() int64
}

// NoTimestamp is the timestamp of an element that has none.
const NoTimestamp = operator.NoTimestamp

// ProcessFunction handles each element of a stream and may emit any number
// of elements. Returning an error fails the job, naming the operator.
//
// Each subtask runs its own copy of a function given as a pointer to a
// struct (a shallow copy), so per-subtask fields set in Open are safe. Plain
// funcs and the variables they capture are shared by all subtasks.
type ProcessFunction[T, U any] interface {
	ProcessElement(ctx Context, v T, out Collector[U]) error
}

// ProcessFunc adapts a function to ProcessFunction.
type ProcessFunc[T, U any] func(ctx Context, v T, out Collector[U]) error

// ProcessElement implements ProcessFunction.
func (f ProcessFunc[T, U]) ProcessElement(ctx Context, v T, out Collector[U]) error {
	return f(ctx, v, out)
}

// Opener is implemented by functions that need setup before the first element.
type Opener interface {
	Open(ctx RuntimeContext) error
}

// Closer is implemented by functions that release resources at the end.
type Closer interface {
	Close() error
}

// CheckpointedFunction is implemented by functions that keep state of their
// own in fields (Flink's CheckpointedFunction): SnapshotState writes it into
// their operator or keyed state at every checkpoint barrier; after a
// restore, Open finds it there again.
type CheckpointedFunction interface {
	SnapshotState(checkpointID int64) error
}

// CheckpointListener is implemented by functions that act when a checkpoint
// completes (to make output visible that the checkpoint covers, say).
// An error fails the job.
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

// Finisher is implemented by functions that emit final results at the end of
// their input, before their output closes.
type Finisher[U any] interface {
	Finish(out Collector[U]) error
}

// runtimeContext adapts operator.Context to RuntimeContext.
type runtimeContext struct{ c *operator.Context }

func (r runtimeContext) op() *operator.Context { return r.c }

func (r runtimeContext) OperatorName() string  { return r.c.OperatorName }
func (r runtimeContext) TaskName() string      { return r.c.TaskName }
func (r runtimeContext) Subtask() int          { return r.c.Subtask }
func (r runtimeContext) Parallelism() int      { return r.c.Parallelism }
func (r runtimeContext) MaxParallelism() int   { return r.c.MaxParallelism }
func (r runtimeContext) ProcessingTime() int64 { return r.c.Clock.NowMillis() }
func (r runtimeContext) Attempt() int          { return r.c.Attempt }

// fnHooks forwards the checkpoint hooks to a user function that has them.
type fnHooks struct{ fn any }

func (h fnHooks) SnapshotState(id int64) error {
	if c, ok := h.fn.(CheckpointedFunction); ok {
		return c.SnapshotState(id)
	}
	return nil
}

func (h fnHooks) NotifyCheckpointComplete(id int64) error {
	if l, ok := h.fn.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

func (h fnHooks) NotifyCheckpointAborted(int64) {}
func (r runtimeContext) OperatorState() *state.OperatorStore {
	return r.c.OperatorState()
}

// Counter is a metric that counts, registered with MetricCounter.
type Counter interface {
	Inc()
	Add(n int64)
}

// MetricCounter registers the counter named name of the operator whose
// function got ctx (Flink's getRuntimeContext().getMetricGroup().counter):
// REST shows it on the operator's vertex as "<subtask>.<operator
// name>.<name>", like the engine's own numLateRecordsDropped. Call it in
// Open, not per element; the same name gives the same counter. Only the
// subtask's goroutine may use it. A context that is not the engine's gets
// a counter that counts but is not published.
func MetricCounter(ctx RuntimeContext, name string) Counter {
	if oc, ok := ctx.(interface{ op() *operator.Context }); ok {
		return oc.op().Counter(name)
	}
	return &operator.Counter{}
}
