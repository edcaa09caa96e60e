package task

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/internal/network"
)

// Aligned checkpoint timeout (execution.checkpointing.aligned-checkpoint-
// timeout), beyond the barrier handler's own timer: under backpressure an
// aligned barrier may sit behind data, in a producer's backlog or in a
// consumer's input queue, long after its timeout, and the handler that
// would switch to unaligned never sees it. As Flink does, the barrier is
// then promoted where it waits: once Timestamp + AlignedTimeout has passed,
//   - a producer turns its barriers still waiting for credit into unaligned
//     priority events; the data they overtake becomes its output channel
//     state (the snapshot's upload waits until every barrier has left or
//     been promoted);
//   - a consumer turns the barriers queued in its input channels (it learns
//     of them as they are delivered, the in-process counterpart of Flink's
//     barrier announcements) into priority events, which switch its
//     handler to unaligned.

// alignTimers arms one timer per checkpoint; it is used from the task
// goroutine and from the goroutines delivering to the task's input gate.
type alignTimers struct {
	mu    sync.Mutex
	armed map[int64]bool
}

// armAlignedTimeout makes the task promote the barriers of br's checkpoint
// once its aligned timeout has passed, if it is an aligned exactly-once
// barrier with a timeout. Safe from any goroutine.
func (t *Task) armAlignedTimeout(br network.Barrier) {
	if br.AlignedTimeout <= 0 || br.Unaligned || br.AtLeastOnce {
		return
	}
	at := &t.alignTimers
	at.mu.Lock()
	if at.armed == nil {
		at.armed = map[int64]bool{}
	}
	if at.armed[br.ID] {
		at.mu.Unlock()
		return
	}
	at.armed[br.ID] = true
	at.mu.Unlock()
	d := time.Duration(br.Timestamp+br.AlignedTimeout+1-t.spec.Clock.NowMillis()) * time.Millisecond
	tm := t.spec.Clock.NewTimer(max(d, 0))
	go func() {
		defer tm.Stop()
		select {
		case <-tm.C():
			t.Mailbox.Put(func() { t.alignedTimedOut(br.ID) })
		case <-t.asyncCtx.Done():
		}
	}()
}

// outputWait is an aligned snapshot's output channel state while its
// barriers may still be promoted.
type outputWait struct {
	output [][][]network.InFlight // per writer, per channel: overtaken buffers
	left   atomic.Int64           // barriers not yet handed to their receiver
	done   chan struct{}
}

func (o *outputWait) sent() {
	if o.left.Add(-1) == 0 {
		close(o.done)
	}
}

// alignedBarrier sends an aligned barrier with a timeout on every output,
// so that it can be promoted later; the snapshot's output state is final
// once every one has been handed over.
func (t *Task) alignedBarrier(br network.Barrier, snap *pendingSnapshot) {
	n := 0
	for _, w := range t.writers {
		n += len(w.Partition().Subs)
	}
	if n == 0 {
		return
	}
	o := &outputWait{output: make([][][]network.InFlight, len(t.writers)), done: make(chan struct{})}
	o.left.Store(int64(n))
	for i, w := range t.writers {
		o.output[i] = make([][]network.InFlight, len(w.Partition().Subs))
		w.Barrier(br, o.sent)
	}
	t.cp.outWaits[br.ID] = o
	snap.output, snap.outputDone = o.output, o.done
	t.armAlignedTimeout(br)
}

// alignedTimedOut promotes the barriers of checkpoint id that still wait
// behind data, on the outputs and in the input channels.
func (t *Task) alignedTimedOut(id int64) {
	t.alignTimers.mu.Lock()
	delete(t.alignTimers.armed, id)
	t.alignTimers.mu.Unlock()
	if t.cp == nil {
		return
	}
	if o := t.cp.outWaits[id]; o != nil {
		delete(t.cp.outWaits, id)
		promoted := 0
		for i, w := range t.writers {
			for ch, sub := range w.Partition().Subs {
				// Kept before the barrier's hook runs, which is before
				// the upload reads it.
				if sub.PromoteBarrier(id, func(over []network.InFlight) { o.output[i][ch] = over }) {
					promoted++
				}
			}
		}
		if promoted > 0 {
			t.spec.Logger.Debug("aligned checkpoint timed out on outputs", "task", t.name, "checkpoint", id, "channels", promoted)
		}
	}
	if t.spec.Gate != nil {
		if n := t.spec.Gate.PromoteBarrier(id); n > 0 {
			t.spec.Logger.Debug("aligned checkpoint timed out on inputs", "task", t.name, "checkpoint", id, "channels", n)
		}
	}
}
