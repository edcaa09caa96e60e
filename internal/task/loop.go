package task

import (
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
}

// loop is the task's mailbox loop: between units of work it runs mailbox
// actions (checkpoint triggers and notifications, operator events),
// processing-time timers and flushes. It takes input only while every
// output can take a buffer; otherwise it waits for one, still serving its
// mailbox, so a backpressured task takes part in checkpoints.
func (t *Task) loop() error {
	var wake <-chan struct{} // a source's wake-up after NothingAvailable
	var retry time.Duration
	for {
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
			// Partly filled buffers may be all the pool has: hand them over,
			// or nothing would ever come back.
			t.flush(t.spec.Clock.Now())
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

// done reports whether the task has nothing left to do: its operators
// finished, its inputs ended, and with checkpointing its final checkpoint
// completed.
func (t *Task) done() bool {
	if !t.finished || (t.source == nil && t.in.live > 0) {
		return false
	}
	return t.cp == nil || t.finalComplete
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
	if t.finished {
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

// pollInput takes one buffer or event from the input gate and handles it.
func (t *Task) pollInput() (bool, error) {
	c, b, ok := t.spec.Gate.Poll()
	if !ok {
		return false, nil
	}
	t.current = 0
	in := c.Input
	switch b.Kind {
	case network.KindData:
		t.recordInput(c.Index, b.Data)
		err := t.readers[in].ProcessBuffer(c.Channel, b.Data)
		b.Recycle()
		c.ReturnCredit()
		if err != nil {
			return true, t.opError(0, err)
		}
	case network.KindWatermark:
		if wm, adv := t.valves[in].watermark(c.Channel, b.Watermark()); adv {
			t.readers[in].ProcessWatermark(wm)
		}
	case network.KindEndOfData:
		if err := t.endOfData(c); err != nil {
			return true, err
		}
	case network.KindEndOfPartition:
		if !t.in.dataEnded[c.Index] { // a producer that ended without saying so
			if err := t.endOfData(c); err != nil {
				return true, err
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
	}
	return true, nil
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
	if wm, adv := t.valves[in].end(c.Channel); adv {
		t.readers[in].ProcessWatermark(wm)
	}
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
	if now.Sub(t.lastPub) >= 50*time.Millisecond {
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
	return d
}

// wait blocks until something may be done: the mailbox, a timer, the given
// source wake-up or retry, output availability (outputs) or input
// (gate). It reports whether the task was canceled.
func (t *Task) wait(wake <-chan struct{}, retry time.Duration, outputs, gate bool) bool {
	var gateC <-chan struct{}
	if gate {
		gateC = t.spec.Gate.Notify()
	}
	var outC <-chan struct{}
	if outputs {
		outC = t.outputReady
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
	case <-timerC:
	case <-t.Mailbox.notify:
	case <-t.cancel:
		return true
	}
	return false
}
