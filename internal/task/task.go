package task

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
)

// ErrCanceled is returned by Run when the task was canceled.
var ErrCanceled = errors.New("task canceled")

// Error is a task failure, naming the operator and subtask it came from.
type Error struct {
	Operator string // operator name
	Task     string // "chain name (i/n)"
	Err      error
	Stack    string // for panics that were not operator.Failure
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

// Spec is everything needed to run one subtask.
type Spec struct {
	Vertex         *graph.Vertex
	OperatorIDs    []string
	Subtask        int
	Attempt        int
	MaxParallelism int
	Mode           operator.Mode
	Clock          clock.Clock
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
}

// Task is one running subtask.
type Task struct {
	spec    Spec
	name    string
	Mailbox *Mailbox
	Stats   operator.IOStats

	current   int // index of the operator running now (see operator.Context.Enter)
	ops       []operator.Lifecycle
	contexts  []*operator.Context
	states    []opState // per operator, owned by the task
	opened    int       // ops[len-opened:] are open
	source    operator.Source
	readers   []operator.RecordReader
	valves    []*valve
	writers   []operator.PartitionWriter
	flushers  []int // indexes of ops that are operator.OutputFlushers
	timed     []int // indexes of ops that are operator.ProcessingTimers
	lastFlush time.Time
	lastPub   time.Time
	started   time.Time
	cancel    <-chan struct{}
}

// New prepares a task; Run builds and runs its chain.
func New(spec Spec) *Task {
	if spec.Clock == nil {
		spec.Clock = clock.System{}
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	name := fmt.Sprintf("%s (%d/%d)", spec.Vertex.Name, spec.Subtask+1, spec.Vertex.Parallelism)
	return &Task{spec: spec, name: name, Mailbox: NewMailbox()}
}

// Name is the task's display name, "chain (i/n)".
func (t *Task) Name() string { return t.name }

// Run builds the chain and runs it until its input ends, it fails, or cancel
// is closed. It returns nil when the task finished, ErrCanceled when it was
// canceled, and an *Error when an operator failed.
func (t *Task) Run(cancel <-chan struct{}) (err error) {
	t.cancel = cancel
	defer func() {
		if r := recover(); r != nil {
			err = t.failure(r)
		}
		if cerr := t.closeAll(); err == nil {
			err = cerr
		}
		t.publish(time.Now())
	}()
	if err := t.build(); err != nil {
		return err
	}
	for i := len(t.ops) - 1; i >= 0; i-- {
		t.current = i
		if err := t.ops[i].Open(t.contexts[i]); err != nil {
			return t.opError(i, fmt.Errorf("open: %w", err))
		}
		t.opened++
	}
	now := time.Now()
	t.lastFlush, t.lastPub, t.started = now, now, now
	if t.source != nil {
		err = t.runSource()
	} else {
		err = t.runInputs()
	}
	if err != nil {
		return err
	}
	for i, op := range t.ops {
		t.current = i
		if err := op.Finish(); err != nil {
			return t.opError(i, fmt.Errorf("finish: %w", err))
		}
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
	case error:
		cause = fmt.Errorf("panic: %w", v)
		stack = string(debug.Stack())
	default:
		cause = fmt.Errorf("panic: %v", v)
		stack = string(debug.Stack())
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
					err = t.opError(i, fmt.Errorf("close: panic: %v", r))
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

// tick flushes and publishes counters when their intervals have passed.
func (t *Task) tick() {
	now := time.Now()
	if len(t.timed) > 0 {
		t.fireProcessingTimers()
	}
	if bt := t.spec.BufferTimeout; bt >= 0 && now.Sub(t.lastFlush) >= bt {
		t.flush(now)
	}
	if now.Sub(t.lastPub) >= 50*time.Millisecond {
		t.lastPub = now
		t.publish(now)
	}
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

// fireProcessingTimers calls OnProcessingTime on operators whose requested
// wake-up time has come.
func (t *Task) fireProcessingTimers() {
	now := t.spec.Clock.NowMillis()
	for _, i := range t.timed {
		ctx := t.contexts[i]
		if w := ctx.WakeUp(); w != operator.NoWakeUp && w <= now {
			ctx.WakeAt(operator.NoWakeUp)
			t.current = i
			t.ops[i].(operator.ProcessingTimer).OnProcessingTime(now)
		}
	}
}

// waitTimer returns a channel that fires when the next flush or processing
// time wake-up is due, or nil when nothing is due.
func (t *Task) waitTimer() (<-chan time.Time, *time.Timer) {
	d := time.Duration(-1)
	if bt := t.spec.BufferTimeout; bt >= 0 && len(t.writers)+len(t.flushers) > 0 {
		d = max(bt-time.Since(t.lastFlush), time.Millisecond)
	}
	if len(t.timed) > 0 {
		now := t.spec.Clock.NowMillis()
		for _, i := range t.timed {
			if w := t.contexts[i].WakeUp(); w != operator.NoWakeUp {
				wd := max(time.Duration(w-now)*time.Millisecond, time.Millisecond)
				if d < 0 || wd < d {
					d = wd
				}
			}
		}
	}
	if d < 0 {
		return nil, nil
	}
	tm := time.NewTimer(d)
	return tm.C, tm
}

func (t *Task) runSource() error {
	for {
		t.Mailbox.run()
		if t.canceled() {
			return ErrCanceled
		}
		t.current = 0
		status, wait, retry, err := t.source.PollNext()
		if err != nil {
			return t.opError(0, err)
		}
		t.tick()
		switch status {
		case operator.MoreAvailable:
			continue
		case operator.EndOfInput:
			return nil
		}
		t.flush(time.Now())
		var retryC <-chan time.Time
		var tm *time.Timer
		if wait == nil {
			tm = time.NewTimer(time.Duration(max(retry, 1)) * time.Millisecond)
			retryC = tm.C
		}
		timerC, tm2 := t.waitTimer()
		t0 := time.Now()
		select {
		case <-wait:
		case <-retryC:
		case <-timerC:
		case <-t.Mailbox.notify:
		case <-t.cancel:
		}
		if tm != nil {
			tm.Stop()
		}
		if tm2 != nil {
			tm2.Stop()
		}
		t.Stats.IdleNanos += int64(time.Since(t0))
	}
}

func (t *Task) runInputs() error {
	gate := t.spec.Gate
	live := 0
	remaining := make([]int, len(t.spec.ChannelsPerInput))
	for i, n := range t.spec.ChannelsPerInput {
		remaining[i] = n
		live += n
	}
	for live > 0 {
		t.Mailbox.run()
		c, b, ok := gate.Poll()
		if !ok {
			if t.canceled() {
				return ErrCanceled
			}
			t.tick()
			timerC, tm := t.waitTimer()
			t0 := time.Now()
			select {
			case <-gate.Notify():
			case <-t.Mailbox.notify:
			case <-timerC:
			case <-t.cancel:
				if tm != nil {
					tm.Stop()
				}
				return ErrCanceled
			}
			if tm != nil {
				tm.Stop()
			}
			t.Stats.IdleNanos += int64(time.Since(t0))
			continue
		}
		t.current = 0
		in := c.Input
		switch b.Kind {
		case network.KindData:
			if err := t.readers[in].ProcessBuffer(c.Channel, b.Data); err != nil {
				b.Recycle()
				return t.opError(0, err)
			}
		case network.KindWatermark:
			if wm, adv := t.valves[in].watermark(c.Channel, b.Watermark()); adv {
				t.readers[in].ProcessWatermark(wm)
			}
		case network.KindEndOfPartition:
			if err := t.readers[in].ChannelEnded(c.Channel); err != nil {
				b.Recycle()
				return t.opError(0, err)
			}
			live--
			remaining[in]--
			if wm, adv := t.valves[in].end(c.Channel); adv {
				t.readers[in].ProcessWatermark(wm)
			}
			if remaining[in] == 0 {
				if ie, ok := t.ops[0].(InputEnder); ok {
					ie.EndInput(in)
				}
			}
		}
		if !b.IsEvent() {
			b.Recycle()
			c.ReturnCredit()
		}
		t.tick()
	}
	return nil
}

// InputEnder is implemented by multi-input operators that want to know when
// one of their inputs has ended.
type InputEnder interface{ EndInput(input int) }
