package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/internal/watermark"
	"github.com/weirhq/weir/state"
)

// ErrCanceled is returned by Run when the task was canceled.
var ErrCanceled = errors.New("task canceled")

// Error is a task failure, naming the operator and subtask it came from.
type Error struct {
	Operator string // operator name
	Task     string // "chain name (i/n)"
	Err      error
	Stack    string // where a panic happened (failure.Panic.Stack); "" for errors
}

func (e *Error) Error() string {
	return fmt.Sprintf("operator %q in task %q failed: %v", e.Operator, e.Task, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// Output is this subtask's result partition on one output edge.
type Output struct {
	Edge      *graph.JobEdge
	Partition *network.ResultPartition
}

// Reporter receives what a task tells the JobManager. Its methods must not
// block for long: the task goroutine and its upload goroutines call them.
type Reporter interface {
	Acknowledge(protocol.AcknowledgeCheckpoint)
	Decline(protocol.DeclineCheckpoint)
	SendEvent(protocol.OperatorEvent)
	SourceEnded(protocol.SourceEnded)
}

// Checkpoints configures a task's part in checkpointing.
type Checkpoints struct {
	// Store is where this job's checkpoints are written.
	Store *storage.Store
	// Mode is exactly-once (aligned) or at-least-once.
	Mode barrier.Mode
	// Incremental makes Pebble keyed state upload native checkpoints, of
	// which only new files are written.
	Incremental bool
	// Interval is the checkpoint interval (sink.Context.CheckpointInterval).
	Interval time.Duration
	// ChannelStateMemory bounds the input channel state one unaligned
	// checkpoint of the task copies while it records (0: no bound); past
	// it the task declines the checkpoint.
	ChannelStateMemory int64
	// Lineage is the job's lineage (sink.Context.Lineage): sinks tie their
	// output to it.
	Lineage string
	// SavepointsOnly: the job takes no checkpoints, only savepoints
	// (Config.Checkpointing unset). Its operators see no checkpointing
	// (sinks commit when their input ends) and the task ends without
	// waiting for a final checkpoint.
	SavepointsOnly bool
}

// Spec is everything needed to run one subtask.
type Spec struct {
	Exec           protocol.ExecutionID
	Vertex         *graph.Vertex
	OperatorIDs    []string
	MaxParallelism int
	Mode           operator.Mode
	Clock          clock.Clock
	// KeyHash is the job's key hash version (protocol.Deployment.KeyHash).
	KeyHash keygroup.HashVersion
	// BufferTimeout: partly filled buffers are flushed at least this often;
	// 0 flushes after every batch the task handles, negative only when full.
	BufferTimeout time.Duration
	Outputs       []Output
	// Gate holds the connected input channels (nil for sources); each
	// channel's Input and Channel say where it belongs. ChannelsPerInput has
	// the number of channels of each logical input.
	Gate             *network.InputGate
	ChannelsPerInput []int
	Logger           *slog.Logger
	// StateBackend and StateDir configure keyed state ("" and "": heap,
	// nothing on disk); each operator subtask gets its own directory below StateDir.
	StateBackend, StateDir string
	// HeapMemory bounds the hashmap backend's tables of the TaskManager's
	// subtasks (nil: unbounded).
	HeapMemory *budget.Budget
	// Checkpoints is nil when the job takes no checkpoints.
	Checkpoints *Checkpoints
	// Restore is the state to restore before the operators open (nil:
	// fresh start), read from RestoreStore.
	Restore      *protocol.TaskRestore
	RestoreStore *storage.Store
	// Reporter receives acknowledgements, declines and operator events.
	Reporter Reporter
	// Running, if set, is called once the task has restored its state and
	// opened its operators, before it takes its first input.
	Running func()
}

// Task is one running subtask.
type Task struct {
	spec    Spec
	name    string
	Mailbox *Mailbox
	Stats   operator.IOStats

	current  int // index of the operator running now (see operator.Context.Enter)
	ops      []operator.Lifecycle
	contexts []*operator.Context
	states   []opState // per operator, owned by the task
	opened   int       // ops[len-opened:] are open
	source   operator.Source
	readers  []operator.RecordReader
	valves   []*watermark.Valve
	// opIdle: operators of the chain that marked their output idle (a
	// source, a watermark assigner with idleness); outIdle: the status the
	// writers last announced.
	opIdle   map[int]bool
	outIdle  bool
	writers  []operator.PartitionWriter
	flushers []int // indexes of ops that are operator.OutputFlushers
	timed    []int // indexes of ops that are operator.ProcessingTimers
	cancel   <-chan struct{}
	// outputReady is signalled when a buffer comes back to an output pool.
	outputReady chan struct{}

	lastFlush, lastPub, started time.Time

	in inputs      // network tasks: the state of the input channels
	cp *checkpoint // nil when checkpointing is off
	// restoredChannels holds the head operator's restored channel state.
	restoredChannels protocol.OperatorRestore

	// finished: the operators finished (end of data); the task then waits,
	// with checkpointing on, until the JobManager says that a checkpoint
	// every task took after finishing is complete (FLIP-147).
	finished      bool
	finalComplete bool
	// stopAt is the stop-with-savepoint a source task took (0: none): it
	// polls its source no more unless that savepoint is aborted.
	stopAt int64
	// terminated: the stop-with-savepoint completed; the task ends.
	terminated bool
	// failed is set by mailbox actions that fail the task.
	failed error
	// asyncWG waits for the upload goroutines; asyncCancel stops them.
	asyncWG     sync.WaitGroup
	asyncCtx    context.Context
	asyncCancel context.CancelFunc
	alignTimers alignTimers
}

// New prepares a task; Run builds and runs its chain.
func New(spec Spec) *Task {
	if spec.Clock == nil {
		spec.Clock = clock.System{}
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	name := fmt.Sprintf("%s (%d/%d)", spec.Vertex.Name, spec.Exec.Subtask+1, spec.Vertex.Parallelism)
	t := &Task{spec: spec, name: name, Mailbox: NewMailbox(), outputReady: make(chan struct{}, 1)}
	t.Stats.Clock = spec.Clock
	t.Stats.ResetWatermarks()
	t.Mailbox.interrupt = &t.Stats.Yield
	if spec.Gate != nil {
		spec.Gate.SetInterrupt(&t.Stats.Yield)
	}
	t.asyncCtx, t.asyncCancel = context.WithCancel(context.Background())
	if spec.Gate != nil && spec.Checkpoints != nil {
		// Before any producer can deliver: barriers queued while the
		// chain is still being built count too.
		spec.Gate.SetAnnounce(t.armAlignedTimeout)
	}
	return t
}

// Name is the task's display name, "chain (i/n)".
func (t *Task) Name() string { return t.name }

// Fail fails the task from another goroutine (a remote channel of its
// failed, say): the task loop returns err at its next turn, also while it
// waits for input or output. It reports false when the task has ended.
func (t *Task) Fail(err error) bool {
	return t.Mailbox.Put(func() {
		if t.failed == nil {
			t.failed = err
		}
	})
}

// Run builds the chain and runs it until its input ends (and, with
// checkpointing, its final checkpoint completed), it fails, or cancel is
// closed. It returns nil when the task finished, ErrCanceled when it was
// canceled, and an *Error when an operator failed.
func (t *Task) Run(cancel <-chan struct{}) (err error) {
	t.cancel = cancel
	defer func() {
		if r := recover(); r != nil {
			err = t.failure(r)
		}
		t.Mailbox.close()
		if t.in.cur != nil {
			t.in.cur.Recycle()
			t.in.cur = nil
		}
		t.asyncCancel()
		t.asyncWG.Wait()
		if cerr := t.closeAll(); err == nil {
			err = cerr
		}
		t.publish(t.spec.Clock.Now())
	}()
	if err := t.build(); err != nil {
		return err
	}
	if err := t.restore(); err != nil {
		return err
	}
	for i, op := range t.ops {
		if si, ok := op.(operator.StateInitializer); ok {
			t.current = i
			if err := si.InitializeState(t.spec.Restore != nil); err != nil {
				return t.opError(i, fmt.Errorf("initializing state: %w", err))
			}
		}
	}
	for i := len(t.ops) - 1; i >= 0; i-- {
		t.current = i
		if err := t.ops[i].Open(t.contexts[i]); err != nil {
			return t.opError(i, fmt.Errorf("open: %w", err))
		}
		t.opened++
	}
	if err := t.replayChannelState(); err != nil {
		return err
	}
	if t.spec.Running != nil {
		t.spec.Running()
	}
	now := t.spec.Clock.Now()
	t.lastFlush, t.lastPub, t.started = now, now, now
	if err := t.loop(); err != nil {
		return err
	}
	if t.terminated {
		// Stopped with a savepoint: the consumers end on their own
		// notification; an end of partition would finish their operators
		// (fire windows, flush) after the savepoint.
		return nil
	}
	for _, w := range t.writers {
		w.EndOfPartition()
	}
	return nil
}

func (t *Task) failure(r any) error {
	if e, ok := r.(error); ok && errors.Is(e, network.ErrCanceled) {
		return ErrCanceled
	}
	var cause error
	stack := ""
	switch v := r.(type) {
	case *operator.Failure:
		cause = v.Err
	case *budget.Error:
		// A state table past its bound: the message names the setting, and
		// a restart would restore the state that grew past it.
		cause = failure.Permanent(v)
	case *state.BackendError:
		// Weir's own signal that a state backend failed, not the user's
		// panic; where the state call was made still helps.
		cause = fmt.Errorf("panic: %w", v)
		stack = panicStack()
	default:
		p := &failure.Panic{Value: r, Stack: panicStack()}
		cause, stack = p, p.Stack
	}
	e := t.opError(t.current, cause)
	e.Stack = stack
	return e
}

func (t *Task) opError(i int, err error) *Error {
	name := "?"
	if i >= 0 && i < len(t.spec.Vertex.Nodes) {
		name = t.spec.Vertex.Nodes[i].Name
	}
	return &Error{Operator: name, Task: t.name, Err: err}
}

// closeAll closes the open operators, tail first, even after a failure,
// then the keyed state backends the task created for them.
func (t *Task) closeAll() (err error) {
	for i := len(t.ops) - t.opened; i < len(t.ops); i++ {
		func() {
			defer func() {
				if r := recover(); r != nil && err == nil {
					p := &failure.Panic{Value: r, Stack: panicStack()}
					e := t.opError(i, fmt.Errorf("close: %w", p))
					e.Stack = p.Stack
					err = e
				}
			}()
			if cerr := t.ops[i].Close(); cerr != nil && err == nil {
				err = t.opError(i, fmt.Errorf("close: %w", cerr))
			}
		}()
	}
	t.opened = 0
	for i, st := range t.states {
		if st.keyed != nil {
			st.keyed.Timers.Release()
			if cerr := st.keyed.Backend.Close(); cerr != nil && err == nil {
				err = t.opError(i, fmt.Errorf("closing its keyed state: %w", cerr))
			}
			t.states[i].keyed = nil
		}
	}
	return err
}

func (t *Task) canceled() bool {
	select {
	case <-t.cancel:
		return true
	default:
		return false
	}
}

// finishOperators is the end of data: operators finish head first, so a
// finishing operator can still emit into open successors, then every
// consumer is told that no records follow.
func (t *Task) finishOperators() error {
	for i, op := range t.ops {
		t.current = i
		if err := op.Finish(); err != nil {
			return t.opError(i, fmt.Errorf("finish: %w", err))
		}
	}
	for _, w := range t.writers {
		w.EndOfData()
	}
	t.finished = true
	return nil
}

// publish derives busy time (neither idle nor backpressured) and makes the
// counters visible to other goroutines.
func (t *Task) publish(now time.Time) {
	if !t.started.IsZero() {
		t.Stats.BusyNanos = max(0, int64(now.Sub(t.started))-t.Stats.IdleNanos-t.Stats.BackPressuredNanos)
	}
	t.Stats.Publish()
}

func (t *Task) flush(now time.Time) {
	for _, w := range t.writers {
		w.Flush()
	}
	for _, i := range t.flushers {
		t.current = i
		if err := t.ops[i].(operator.OutputFlusher).FlushOutput(); err != nil {
			operator.Fail(err)
		}
	}
	t.lastFlush = now
}

// InputEnder is implemented by multi-input operators that want to know when
// one of their inputs has ended.
type InputEnder interface{ EndInput(input int) }
