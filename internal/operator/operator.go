package operator

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/state"
)

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp = network.NoTimestamp

// MaxWatermark is the watermark that ends event time: every timer fires.
const MaxWatermark = math.MaxInt64

// Input receives the elements of one input of an operator. An operator's
// output is the Input of whatever consumes it: a chained operator, a fan-out
// or a network writer.
type Input[T any] interface {
	ProcessElement(v T, ts int64)
	ProcessWatermark(wm int64)
}

// BatchInput is an Input that also takes several elements in one call, all
// with the same timestamp: the same as ProcessElement(vs[i], ts) for each i
// in order, for operators that run no user code between the elements'
// emissions (a chained map, filter or discard). The callee must neither keep
// vs nor change its elements. A source's CollectBatch goes through it when
// the head of its chain implements it, so a chain of such operators costs
// one interface call per batch instead of one per record per operator.
type BatchInput[T any] interface {
	Input[T]
	ProcessBatch(vs []T, ts int64)
}

// AsBatch returns in as a BatchInput, or nil when it is not one.
func AsBatch[T any](in Input[T]) BatchInput[T] {
	b, _ := in.(BatchInput[T])
	return b
}

// EmitTimestamped gives each element of vs its timestamp ts(v), all of
// them first (into *buf, grown as needed), then hands them to in with
// EmitRuns. It returns the larger of max and the batch's largest
// timestamp. The timestamp assigner and sources with a watermark strategy
// take batches through it.
func EmitTimestamped[T any](in BatchInput[T], vs []T, ts func(T) int64, buf *[]int64, max int64) int64 {
	if cap(*buf) < len(vs) {
		*buf = make([]int64, len(vs))
	}
	tss := (*buf)[:len(vs)]
	for i, v := range vs {
		t := ts(v)
		tss[i] = t
		if t > max {
			max = t
		}
	}
	EmitRuns(in, vs, tss)
	return max
}

// EmitRuns hands vs[i] with timestamp tss[i] to in, in order: each run of
// equal timestamps as one batch, a run of one as one element.
func EmitRuns[T any](in BatchInput[T], vs []T, tss []int64) {
	for lo := 0; lo < len(vs); {
		t, hi := tss[lo], lo+1
		for hi < len(vs) && tss[hi] == t {
			hi++
		}
		if hi-lo == 1 {
			in.ProcessElement(vs[lo], t)
		} else {
			in.ProcessBatch(vs[lo:hi], t)
		}
		lo = hi
	}
}

// RunEnder is an Input that may hold back some of the elements a Reader
// hands it and process them together later (to overlap the cache misses of
// their state lookups), as long as it has processed every one of them when
// EndRun returns. A Reader calls UseRuns once when it is made and EndRun
// before every return from ProcessFrom, so that the task never runs a
// watermark, a barrier, a timer or the end of input between an element and
// its processing. An Input that no Reader told to UseRuns (a chained one)
// must process each element before ProcessElement returns.
type RunEnder interface {
	UseRuns()
	EndRun()
}

// Lifecycle is what the task runtime calls on every operator instance.
type Lifecycle interface {
	// Open prepares the operator before the first element.
	Open(ctx *Context) error
	// Finish is called once all inputs have ended, head of the chain first,
	// while downstream operators are still open: it may emit final results.
	Finish() error
	// Close releases resources. It is called on success and on failure.
	Close() error
}

// Mode is how the job runs.
type Mode uint8

const (
	// Streaming emits results continuously.
	Streaming Mode = iota
	// Batch runs bounded inputs as a batch: keyed aggregations emit only
	// their final value per key, at the end of input.
	Batch
)

// Context describes one operator instance in one subtask.
type Context struct {
	OperatorName   string
	OperatorID     string
	TaskName       string
	Subtask        int // 0-based
	Parallelism    int
	MaxParallelism int
	Attempt        int
	Mode           Mode
	Clock          clock.Clock
	// KeyHash is the job's key hash version (keyed operators hash their
	// keys with it); NewContext sets keygroup.CurrentHash.
	KeyHash keygroup.HashVersion
	// Index is this operator's position in its task's chain.
	Index int
	// current is shared by every operator of a task: the index of the
	// operator whose code runs now, for naming the operator a panic came from.
	current *int
	// Cancel is closed when the task is canceled.
	Cancel <-chan struct{}
	// Yield is set when the task wants its operators to return control
	// after the current record (IOStats.Yield); nil outside a task.
	Yield *atomic.Bool
	// State configures keyed state backends of keyed operators.
	State StateConfig
	// operatorState is the operator subtask's non-keyed state; the task
	// creates and restores it before Open (made on first use otherwise).
	operatorState *state.OperatorStore
	// keyed is a keyed operator's state, created and restored by the task.
	keyed *KeyedState
	// Checkpointing is true when the job takes checkpoints.
	Checkpointing bool
	// CheckpointInterval is the checkpoint interval (0 without checkpoints).
	CheckpointInterval time.Duration
	// RestoredCheckpoint is the id of the checkpoint the task restored
	// from (0: a fresh start).
	RestoredCheckpoint int64
	// Lineage is the id shared by the runs of the job that continue one
	// line of checkpoints ("" without checkpoints); see sink.Context.
	Lineage string
	// SendEvent sends an event to the operator's coordinator (set by the task).
	SendEvent func(payload []byte)
	// sideOutputs are the operator's side outputs by tag (each an Input of
	// the tag's type); see SideOutput.
	sideOutputs map[string]any
	// wakeAt is the processing time (ms) at which the task should call the
	// operator's OnProcessingTime; NoWakeUp when none.
	wakeAt int64
	// setIdle, set by the task, records the operator's output status.
	setIdle func(idle bool)
	// metrics is the subtask's operator metrics (nil outside a task).
	metrics *Metrics
}

// SetMetrics is for the task: where Counter registers.
func (c *Context) SetMetrics(m *Metrics) { c.metrics = m }

// Counter registers the operator's counter named name (Flink's
// getMetricGroup().counter(name)); REST shows it on the vertex as
// "<subtask>.<operator name>.<name>". Call it in Open (or when the operator
// is created), not per record. Outside a task the counter is not
// published but still counts.
func (c *Context) Counter(name string) *Counter {
	if c.metrics == nil {
		return &Counter{}
	}
	return c.metrics.Counter(c.OperatorName, name)
}

// SetIdleHook is for the task: where SetIdle goes.
func (c *Context) SetIdleHook(f func(idle bool)) { c.setIdle = f }

// SetIdle marks the operator's output idle (true) or active again (Flink's
// WatermarkStatus): while any operator of a chain is idle, or every input
// channel of the task is, the task's outputs are idle and downstream leaves
// them out of its watermark minimum. An operator that goes idle must mark
// itself active before it emits again. Outside a task it does nothing.
func (c *Context) SetIdle(idle bool) {
	if c.setIdle != nil {
		c.setIdle(idle)
	}
}

// StateConfig says where keyed operators keep their state.
type StateConfig struct {
	Backend string // "hashmap" (default) or "pebble"
	// Dir is this operator subtask's own working directory for on-disk state.
	Dir string
}

// OperatorState returns the operator subtask's non-keyed state store (list,
// union list and broadcast state), creating it on first use.
func (c *Context) OperatorState() *state.OperatorStore {
	if c.operatorState == nil {
		c.operatorState = state.NewOperatorStore()
	}
	return c.operatorState
}

// SetOperatorState gives the operator its (restored) operator state store;
// the task calls it before Open.
func (c *Context) SetOperatorState(s *state.OperatorStore) { c.operatorState = s }

// KeyedState is a keyed operator subtask's state: its backend and timer
// service for its key-group range. The task owns both.
type KeyedState struct {
	Backend statebackend.Keyed
	Timers  *timers.Service
	Range   keygroup.Range
}

// Keyed returns the operator's keyed state (nil for operators that are not keyed).
func (c *Context) Keyed() *KeyedState { return c.keyed }

// SetKeyed gives a keyed operator its state; the task calls it before Open.
func (c *Context) SetKeyed(k *KeyedState) { c.keyed = k }

// NoWakeUp means no processing-time wake-up is requested.
const NoWakeUp = math.MaxInt64

// ProcessingTimer is implemented by operators that asked for a wake-up with
// WakeAt; the task calls OnProcessingTime on its goroutine once the
// processing time (ctx.Clock) reaches the requested time.
type ProcessingTimer interface {
	OnProcessingTime(now int64)
}

// WakeAt asks the task to call the operator's OnProcessingTime at processing
// time t (ms); it replaces any earlier request. NoWakeUp cancels it.
func (c *Context) WakeAt(t int64) { c.wakeAt = t }

// WakeUp returns the requested wake-up time (NoWakeUp: none).
func (c *Context) WakeUp() int64 { return c.wakeAt }

// NewContext returns a context for the operator at position index of a chain
// whose operators share current.
func NewContext(current *int, index int) *Context {
	return &Context{Index: index, current: current, wakeAt: NoWakeUp, KeyHash: keygroup.CurrentHash}
}

// Enter marks this operator as the one running. Operators call it before user
// code, and again after their output returns if user code continues.
func (c *Context) Enter() { *c.current = c.Index }

// SetSideOutputs sets the operator's side outputs by tag (the task, before
// the operator is created).
func (c *Context) SetSideOutputs(sides map[string]any) { c.sideOutputs = sides }

// SideOutput returns the side output of the tag (an Input of its type), or
// nil when the job reads no such side output from this operator.
func (c *Context) SideOutput(tag string) any { return c.sideOutputs[tag] }

// Describe names the subtask as Flink does: "name (2/4)".
func (c *Context) Describe() string {
	return fmt.Sprintf("%s (%d/%d)", c.OperatorName, c.Subtask+1, c.Parallelism)
}

// Failure is how an operator reports an error from user code: it panics with
// a *Failure, and the task turns it into the job's failure cause.
type Failure struct{ Err error }

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Fail aborts the current task with err.
func Fail(err error) { panic(&Failure{Err: err}) }

// Instance is one operator created for one subtask.
type Instance struct {
	Op Lifecycle
	// Keyed asks the task for a keyed state backend and timer service
	// (Context.Keyed), created and restored before Open.
	Keyed bool
	// Inputs holds one Input[IN] per logical input; empty for sources.
	Inputs []any
	// Source is set for source operators.
	Source Source
}

// Factory creates the operator of one graph node for one subtask. out is the
// operator's combined output (an Input[OUT]), or nil when it has none.
type Factory interface {
	Create(ctx *Context, out any) (Instance, error)
}

// FactoryFunc adapts a function to Factory.
type FactoryFunc func(ctx *Context, out any) (Instance, error)

// Create implements Factory.
func (f FactoryFunc) Create(ctx *Context, out any) (Instance, error) { return f(ctx, out) }

// Status is what a source reports after a poll.
type Status uint8

const (
	// MoreAvailable: poll again soon.
	MoreAvailable Status = iota
	// NothingAvailable: wait on the returned channel (or a timer) first.
	NothingAvailable
	// EndOfInput: the source is done.
	EndOfInput
)

// Source is the type-erased side of a source operator: the task polls it on
// its goroutine, between mailbox actions, and it emits a bounded batch of
// records per poll into its typed output.
type Source interface {
	// PollNext emits up to a batch of records. With NothingAvailable, wait is
	// closed or signalled when the source may have more (nil: poll again after
	// the returned delay).
	PollNext() (status Status, wait <-chan struct{}, retryAfterMillis int64, err error)
}
