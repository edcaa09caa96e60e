package task

import (
	"fmt"
	"math"
	"time"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
)

// inputs is a network task's view of its input channels.
type inputs struct {
	live      int   // channels that have not ended their partition
	dataLive  []int // per logical input: channels still sending records
	dataEnded []bool
	handler   *barrier.Handler
	// barrierWake is when the barrier handler's Tick is due (0: none).
	barrierWake int64
	// cur is the data buffer being read when the reader stopped in its
	// middle (see operator.IOStats.Yield), from channel curCh at curPos.
	cur    *network.Buffer
	curCh  *network.InputChannel
	curPos int
}

// loop is the task's mailbox loop: between units of work it runs mailbox
// actions (checkpoint triggers and notifications, operator events),
// processing-time timers and flushes. It takes input only while every
// output can take a buffer; otherwise it waits for one, still serving its
// mailbox and taking barriers that overtake data, so a backpressured task
// takes part in checkpoints. A unit of work is a source's batch or the
// records of an input buffer up to the moment something else needs the
// task (operator.IOStats.Yield): a priority event, mail, a full output.
func (t *Task) loop() error {
	var wake <-chan struct{} // a source's wake-up after NothingAvailable
	var retry time.Duration
	for {
		t.Stats.Yield.Store(false)
		t.Mailbox.run()
		if t.failed != nil {
			return t.failed
		}
		if t.canceled() {
			return ErrCanceled
		}
		if t.done() {
			return nil
		}
		t.tick()
		if !t.finished && !t.outputsAvailable() {
			t.flushStarved()
			if progressed, err := t.pollPriority(); err != nil {
				return err
			} else if progressed {
				continue
			}
			t0 := t.spec.Clock.Now()
			if t.wait(nil, 0, true, false) {
				return ErrCanceled
			}
			t.Stats.BackPressuredNanos += int64(t.spec.Clock.Now().Sub(t0))
			continue
		}
		var progressed bool
		var err error
		if t.source != nil {
			progressed, wake, retry, err = t.pollSource()
		} else {
			progressed, err = t.pollInput()
		}
		if err != nil {
			return err
		}
		if progressed {
			continue
		}
		t.flush(t.spec.Clock.Now())
		t0 := t.spec.Clock.Now()
		if t.wait(wake, retry, false, t.source == nil) {
			return ErrCanceled
		}
		wake, retry = nil, 0
		t.Stats.IdleNanos += int64(t.spec.Clock.Now().Sub(t0))
	}
}

// flushStarved hands over the partly filled buffers of each output whose
// pool has nothing else out: they are all it has, and nothing would ever
// come back. An output with buffers in its channels waits for one of
// those instead, and keeps filling its partial buffers: flushing them
// there sends part-empty buffers whenever a consumer is slower (across
// processes each costs a frame, a write and a credit round trip, for a
// fraction of the bytes). The buffer timeout still bounds how long a
// record waits in them (tick, during the wait too). Without a buffer
// timeout (negative) nothing would bound that wait, and a consumer that
// reads another channel first could wait for a partial buffer forever:
// then every partial buffer is handed over, as before.
func (t *Task) flushStarved() {
	always := t.spec.BufferTimeout < 0
	for _, w := range t.writers {
		if p := w.Partition().Pool; always || (!p.Available() && p.InUse() <= w.Held()) {
			w.Flush()
		}
	}
	for _, i := range t.flushers {
		t.current = i
		if err := t.ops[i].(operator.OutputFlusher).FlushOutput(); err != nil {
			operator.Fail(err)
		}
	}
}

// done reports whether the task has nothing left to do: its operators
// finished, its inputs ended, and with checkpointing its final checkpoint
// completed (a job that takes only savepoints takes no final checkpoint).
func (t *Task) done() bool {
	if t.terminated {
		return true
	}
	if !t.finished || (t.source == nil && t.in.live > 0) {
		return false
	}
	return t.cp == nil || t.cp.cfg.SavepointsOnly || t.finalComplete
}

// outputsAvailable reports whether every output can take a buffer now.
func (t *Task) outputsAvailable() bool {
	for _, w := range t.writers {
		if !w.Partition().Pool.Available() {
			return false
		}
	}
	return true
}

// pollSource polls the source once (a bounded batch).
func (t *Task) pollSource() (progressed bool, wake <-chan struct{}, retry time.Duration, err error) {
	if t.finished || t.stopAt != 0 {
		return false, nil, 0, nil
	}
	t.current = 0
	status, wake, retryMs, err := t.source.PollNext()
	if err != nil {
		return false, nil, 0, t.opError(0, err)
	}
	switch status {
	case operator.MoreAvailable:
		return true, nil, 0, nil
	case operator.EndOfInput:
		if err := t.finishOperators(); err != nil {
			return false, nil, 0, err
		}
		t.spec.Reporter.SourceEnded(sourceEnded(t.spec.Exec))
		return true, nil, 0, nil
	}
	if wake == nil {
		retry = time.Duration(max(retryMs, 1)) * time.Millisecond
	}
	return false, wake, retry, nil
}

// pollInput reads on in the current buffer, or takes the next buffer or
// event from the input gate and handles it. Priority events (barriers that
// overtake data) go before the rest of the current buffer.
func (t *Task) pollInput() (bool, error) {
	if t.in.cur != nil {
		if progressed, err := t.pollPriority(); progressed || err != nil {
			return progressed, err
		}
		t.current = 0
		return true, t.readCurrent()
	}
	c, b, ok := t.spec.Gate.Poll()
	if !ok {
		return false, nil
	}
	t.current = 0
	if b.Kind == network.KindData {
		if t.valves[c.Input].ChannelIdle(c.Channel) {
			// Records wake an idle channel (its producer should have
			// said ACTIVE first; this keeps a lost status harmless).
			t.applyValve(c.Input, t.valves[c.Input].Active(c.Channel))
		}
		t.recordInput(c.Index, b)
		t.in.cur, t.in.curCh, t.in.curPos = b, c, 0
		return true, t.readCurrent()
	}
	return true, t.handleEvent(c, b)
}

// pollPriority takes and handles a priority event, if there is one.
func (t *Task) pollPriority() (bool, error) {
	if t.spec.Gate == nil {
		return false, nil
	}
	c, b, ok := t.spec.Gate.PollPriority()
	if !ok {
		return false, nil
	}
	t.current = 0
	return true, t.handleEvent(c, b)
}

// readCurrent reads records of the current buffer until it is done or the
// reader yields; a done buffer goes back to its pool and its slot to the
// producer.
func (t *Task) readCurrent() error {
	c, b := t.in.curCh, t.in.cur
	pos, err := t.readers[c.Input].ProcessFrom(c.Channel, b.Data, t.in.curPos)
	if err != nil {
		return t.opError(0, err) // the buffer goes back when the task ends
	}
	if pos < len(b.Data) {
		t.in.curPos = pos
		return nil
	}
	t.in.cur, t.in.curCh, t.in.curPos = nil, nil, 0
	b.Recycle()
	c.ReturnCredit()
	return nil
}

// handleEvent handles an event from channel c.
func (t *Task) handleEvent(c *network.InputChannel, b *network.Buffer) error {
	in := c.Input
	if b.Kind == network.KindWatermark || b.Kind == network.KindWatermarkStatus {
		t.recordInput(c.Index, b) // channel state, in its place among the data
	}
	switch b.Kind {
	case network.KindWatermark:
		t.applyValve(in, t.valves[in].Watermark(c.Channel, b.Watermark()))
	case network.KindWatermarkStatus:
		if b.Idle() {
			t.applyValve(in, t.valves[in].Idle(c.Channel))
		} else {
			t.applyValve(in, t.valves[in].Active(c.Channel))
		}
	case network.KindEndOfData:
		return t.endOfData(c)
	case network.KindEndOfPartition:
		if !t.in.dataEnded[c.Index] { // a producer that ended without saying so
			if err := t.endOfData(c); err != nil {
				return err
			}
		}
		t.in.live--
		if t.in.handler != nil {
			t.applyBarrierActions(t.in.handler.EndOfPartition(t.spec.Clock.NowMillis(), c.Index))
		}
	case network.KindBarrier:
		t.onBarrier(c, b)
	case network.KindCancelCheckpoint:
		if t.in.handler != nil {
			t.applyBarrierActions(t.in.handler.CancelMarker(t.spec.Clock.NowMillis(), c.Index, b.CheckpointID()))
		}
	default:
		panic(fmt.Sprintf("task: unexpected %v event", b.Kind))
	}
	return nil
}

// noteInputWatermark records the task's input watermark for metrics: the
// minimum over its inputs, as a multi-input operator combines them.
func (t *Task) noteInputWatermark() {
	lo := int64(math.MaxInt64)
	for _, v := range t.valves {
		lo = min(lo, v.Current())
	}
	t.Stats.InputWatermark = lo
}

// endOfData handles a channel's last record: the reader checks no record was
// cut short, the channel leaves the watermark minimum, and when every
// channel of every input has ended the operators finish.
func (t *Task) endOfData(c *network.InputChannel) error {
	t.in.dataEnded[c.Index] = true
	in := c.Input
	if err := t.readers[in].ChannelEnded(c.Channel); err != nil {
		return t.opError(0, err)
	}
	t.applyValve(in, t.valves[in].End(c.Channel))
	t.in.dataLive[in]--
	if t.in.dataLive[in] == 0 {
		if ie, ok := t.ops[0].(InputEnder); ok {
			ie.EndInput(in)
		}
	}
	for _, n := range t.in.dataLive {
		if n > 0 {
			return nil
		}
	}
	return t.finishOperators()
}

// publishInterval is how often the task publishes its counters.
const publishInterval = 50 * time.Millisecond

// tick runs what is due: processing-time timers, the barrier handler's
// timeout, flushes and counter publication.
func (t *Task) tick() {
	now := t.spec.Clock.Now()
	if len(t.timed) > 0 {
		t.fireProcessingTimers()
	}
	if t.in.barrierWake > 0 && now.UnixMilli() >= t.in.barrierWake {
		t.applyBarrierActions(t.in.handler.Tick(now.UnixMilli()))
	}
	if bt := t.spec.BufferTimeout; bt >= 0 && now.Sub(t.lastFlush) >= bt {
		t.flush(now)
	}
	if now.Sub(t.lastPub) >= publishInterval {
		t.lastPub = now
		t.publish(now)
	}
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

// nextDue is how long until the next flush, processing-time wake-up or
// barrier timeout (negative: nothing due).
func (t *Task) nextDue() time.Duration {
	d := time.Duration(-1)
	earlier := func(x time.Duration) {
		x = max(x, time.Millisecond)
		if d < 0 || x < d {
			d = x
		}
	}
	now := t.spec.Clock.Now()
	if bt := t.spec.BufferTimeout; bt >= 0 && len(t.writers)+len(t.flushers) > 0 {
		earlier(bt - now.Sub(t.lastFlush))
	}
	nowMs := now.UnixMilli()
	for _, i := range t.timed {
		if w := t.contexts[i].WakeUp(); w != operator.NoWakeUp {
			earlier(time.Duration(w-nowMs) * time.Millisecond)
		}
	}
	if t.in.barrierWake > 0 {
		earlier(time.Duration(t.in.barrierWake-nowMs) * time.Millisecond)
	}
	if t.Stats.Unpublished() {
		// Without this, the last records before a pause stay unpublished
		// until something else wakes the task: REST would show stale
		// counts and watermarks for as long as the input is quiet.
		earlier(publishInterval - now.Sub(t.lastPub))
	}
	return d
}

// wait blocks until something may be done: the mailbox, a timer, the given
// source wake-up or retry, output availability or a priority event
// (outputs), or input (gate). It reports whether the task was canceled.
func (t *Task) wait(wake <-chan struct{}, retry time.Duration, outputs, gate bool) bool {
	var gateC <-chan struct{}
	if gate {
		gateC = t.spec.Gate.Notify()
	}
	var outC, prioC <-chan struct{}
	if outputs {
		outC = t.outputReady
		if t.spec.Gate != nil {
			prioC = t.spec.Gate.PriorityNotify()
		}
	}
	d := t.nextDue()
	if retry > 0 && (d < 0 || retry < d) {
		d = retry
	}
	var timerC <-chan time.Time
	if d >= 0 {
		tm := t.spec.Clock.NewTimer(d)
		defer tm.Stop()
		timerC = tm.C()
	}
	select {
	case <-wake:
	case <-gateC:
	case <-outC:
	case <-prioC:
	case <-timerC:
	case <-t.Mailbox.notify:
	case <-t.cancel:
		return true
	}
	return false
}
