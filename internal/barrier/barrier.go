package barrier

import (
	"cmp"
	"fmt"
	"slices"
)

// Mode is the checkpointing guarantee of the job.
type Mode int

const (
	// ExactlyOnce aligns barriers: a channel that delivered the barrier of
	// the pending checkpoint is blocked until every channel has delivered
	// it. A barrier may turn the checkpoint unaligned (Barrier.Unaligned,
	// Barrier.AlignedTimeout).
	ExactlyOnce Mode = iota
	// AtLeastOnce never blocks and never records channel state: it snapshots
	// once a checkpoint's barrier has come on every channel, like Flink's
	// CheckpointBarrierTracker. Barrier.Unaligned and AlignedTimeout are
	// ignored (Flink rejects unaligned checkpoints in this mode when the
	// job is built).
	AtLeastOnce
)

func (m Mode) String() string {
	switch m {
	case ExactlyOnce:
		return "exactly-once"
	case AtLeastOnce:
		return "at-least-once"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Barrier is a checkpoint barrier as it comes out of one input channel. All
// barriers of one checkpoint carry the same ID, Timestamp and AlignedTimeout;
// Unaligned may differ per channel, because an upstream task whose alignment
// timed out forwards the barrier unaligned.
type Barrier struct {
	ID        int64 // checkpoint id, > 0; newer checkpoints have larger ids
	Timestamp int64 // trigger time of the checkpoint (epoch ms)
	Unaligned bool  // the checkpoint is unaligned (from the start, or since an upstream timed out)
	// AlignedTimeout, when > 0 and the barrier is aligned, lets the
	// checkpoint start aligned and switch to unaligned once
	// now - Timestamp > AlignedTimeout. 0: never switch.
	AlignedTimeout int64
}

// Snapshot tells the caller to take the task's snapshot of checkpoint ID and
// forward its barrier downstream (see the package doc for the order).
// The barrier to forward is Barrier{ID, Timestamp, Unaligned, AlignedTimeout}.
type Snapshot struct {
	ID             int64
	Unaligned      bool  // forward the barrier as a priority event; channel state follows Record
	Timestamp      int64 // the checkpoint's trigger time
	AlignedTimeout int64 // the checkpoint's aligned timeout, for the downstream tasks
}

// Cancel tells the caller to give up checkpoint ID: decline it to the
// coordinator and forward a cancel marker downstream. The Handler emits at
// most one Cancel per ID (see Abort for the one bounded exception).
type Cancel struct {
	ID     int64
	Reason string
}

// Actions is what the caller must do after one call, in the order of the
// package documentation. The zero value means nothing to do (and no timer).
type Actions struct {
	// Cancel lists checkpoints given up on, oldest first. One call can give
	// up on several: a cancel marker for a newer checkpoint subsumes the
	// pending one, and at-least-once can drop several at a time. Every ID
	// in Cancel is smaller than Snapshot.ID when both are set.
	Cancel []Cancel
	// Snapshot, when set, is the checkpoint to snapshot now. Snapshot IDs
	// increase strictly over the life of a Handler.
	Snapshot *Snapshot
	// Record lists channels (ascending) whose data buffers from now on are
	// channel state of the unaligned checkpoint being recorded, until they
	// appear in StopRecording, or that checkpoint appears in Done or Cancel.
	Record []int
	// StopRecording lists channels (ascending) whose channel state is
	// complete: their barrier arrived or they ended.
	StopRecording []int
	// Done, when set, is the checkpoint whose barrier every channel has
	// delivered (or ended): its channel state is complete. It comes with or
	// after the Snapshot of the same ID; aligned checkpoints get both in
	// one Actions.
	Done *int64
	// Block lists channels (ascending) to stop taking buffers from.
	Block []int
	// Unblock lists channels (ascending) to take buffers from again.
	// Block and Unblock are disjoint.
	Unblock []int
	// AlignmentStart is now (the call's time, epoch ms, so > 0) when this
	// call brought the first barrier of a checkpoint, for the
	// alignment-time metric; 0 otherwise.
	AlignmentStart int64
	// WakeAt is the time at which Tick must be called at the latest (the
	// aligned timeout of the pending checkpoint); 0: no timer needed.
	WakeAt int64
}

// phase is the state of an exactly-once Handler's single pending checkpoint.
// Allowed transitions:
//
//	idle      -> aligning   first aligned barrier of a newer checkpoint
//	idle      -> recording  first barrier of a newer checkpoint, unaligned or already timed out
//	aligning  -> recording  unaligned barrier or aligned timeout (Snapshot, unaligned)
//	aligning  -> idle       all channels delivered (Snapshot + Done), or canceled
//	recording -> idle       all channels delivered (Done), or canceled
//
// A first barrier that completes at once (one live channel) passes through
// aligning or recording within the same call.
type phase int

const (
	idle      phase = iota // no checkpoint pending: latest is done, canceled or none
	aligning               // waiting for cur's barrier on the missing channels; received ones blocked
	recording              // cur snapshotted unaligned; recording the channels that have not delivered it
)

func (p phase) String() string {
	return [...]string{"idle", "aligning", "recording"}[p]
}

// channel is one input channel as the Handler sees it.
type channel struct {
	ended bool // end of partition came: nothing more will
	// Exactly-once only; all false while idle.
	received  bool // delivered the barrier of cur
	blocked   bool // aligning: received, and not to be read until cur completes
	recording bool // recording: live and not received; its data is cur's channel state
}

// tracked is one checkpoint an at-least-once Handler is counting barriers of.
type tracked struct {
	id       int64
	first    Barrier // its first barrier (zero if it was canceled before one)
	received []bool  // per channel: its barrier (or cancel marker) came
	missing  int     // live channels that have not delivered it; > 0 while tracked
	aborted  bool    // Cancel was emitted; tracked on only to absorb its other barriers and markers
}

// maxTracked bounds the checkpoints an at-least-once Handler tracks at once,
// as Flink's tracker does: beyond it, the oldest is given up on.
const maxTracked = 50

// maxRemembered bounds the ids remembered as canceled, for Abort of a
// checkpoint no longer pending. An older one is forgotten: an Abort for it
// emits a second Cancel, which is harmless (a cancel marker for an old id is
// ignored downstream, a repeated decline by the coordinator).
const maxRemembered = 64

// Handler handles the barriers of one task's input channels. It is not safe
// for concurrent use: the task goroutine owns it.
type Handler struct {
	mode     Mode
	channels []channel
	live     int     // channels that have not ended
	latest   int64   // highest id seen in a barrier, cancel marker or Abort; 0: none
	canceled []int64 // ids this Handler emitted Cancel for, oldest first; at most maxRemembered

	// Exactly-once.
	phase   phase
	cur     Barrier // the pending checkpoint (phase != idle); Unaligned once it switched
	missing int     // live channels that have not delivered cur (phase != idle)

	// At-least-once.
	pending    []*tracked // ascending ids, all <= latest
	maxTracked int
}

// New returns a Handler for a task with the given number of input channels
// (numbered 0..channels-1), none of them ended.
func New(channels int, mode Mode) *Handler {
	if channels < 1 {
		panic(fmt.Sprintf("barrier: %d input channels", channels))
	}
	if mode != ExactlyOnce && mode != AtLeastOnce {
		panic(fmt.Sprintf("barrier: unknown mode %d", int(mode)))
	}
	return &Handler{
		mode:       mode,
		channels:   make([]channel, channels),
		live:       channels,
		maxTracked: maxTracked,
	}
}

// Barrier handles barrier b taken from channel ch at time now.
func (h *Handler) Barrier(now int64, ch int, b Barrier) Actions {
	h.checkInput(ch, "barrier")
	checkID(b.ID)
	var a Actions
	if h.mode == AtLeastOnce {
		h.trackBarrier(now, ch, b, &a)
	} else {
		h.alignBarrier(now, ch, b, &a)
	}
	h.finish(now, &a)
	return a
}

// CancelMarker handles a cancel marker for checkpoint id taken from channel
// ch: the upstream task gave up on id. A marker for the pending checkpoint
// cancels it; one for a newer checkpoint cancels that before its first
// barrier (its barriers are then ignored) and subsumes the pending one.
func (h *Handler) CancelMarker(now int64, ch int, id int64) Actions {
	h.checkInput(ch, "cancel marker")
	checkID(id)
	var a Actions
	if h.mode == AtLeastOnce {
		h.trackCancel(ch, id, &a)
	} else {
		h.alignCancel(ch, id, &a)
	}
	h.finish(now, &a)
	return a
}

// EndOfPartition handles the end of channel ch: it counts as having
// delivered the barrier of every later checkpoint, and nothing more may come
// from it. Once every channel has ended, nothing is pending.
func (h *Handler) EndOfPartition(now int64, ch int) Actions {
	h.checkInput(ch, "end of partition")
	h.channels[ch].ended = true
	h.live--
	var a Actions
	if h.mode == AtLeastOnce {
		h.trackEnd(ch, &a)
	} else {
		h.alignEnd(ch, &a)
	}
	h.finish(now, &a)
	return a
}

// Tick lets the aligned timeout fire: call it at Actions.WakeAt (or later).
// Every other call fires it too when it is due; Tick is for when nothing
// else comes.
func (h *Handler) Tick(now int64) Actions {
	var a Actions
	h.finish(now, &a)
	return a
}

// Abort handles the task giving up on checkpoint id itself (its snapshot
// failed, or it was told the checkpoint was aborted). If id is pending, its
// alignment or recording stops; if id is newer than any seen, its barriers
// and those of every checkpoint older than it will be ignored (as after a
// cancel marker for it) and, exactly-once, the pending checkpoint is
// subsumed.
// Cancel(id, reason) is emitted unless the Handler already emitted a Cancel
// for id (it remembers the last 64 it emitted).
func (h *Handler) Abort(now int64, id int64, reason string) Actions {
	checkID(id)
	var a Actions
	if h.mode == AtLeastOnce {
		h.trackAbort(id, reason, &a)
	} else {
		h.alignAbort(id, reason, &a)
	}
	h.finish(now, &a)
	return a
}

func (h *Handler) checkInput(ch int, what string) {
	if ch < 0 || ch >= len(h.channels) {
		panic(fmt.Sprintf("barrier: %s from channel %d of %d", what, ch, len(h.channels)))
	}
	c := &h.channels[ch]
	if c.ended {
		panic(fmt.Sprintf("barrier: %s from channel %d after its end of partition", what, ch))
	}
	if c.blocked {
		panic(fmt.Sprintf("barrier: %s from channel %d, which is blocked", what, ch))
	}
}

func checkID(id int64) {
	if id <= 0 {
		panic(fmt.Sprintf("barrier: checkpoint id %d is not positive", id))
	}
}

// cancel emits Cancel(id) and remembers it.
func (h *Handler) cancel(a *Actions, id int64, reason string) {
	a.Cancel = append(a.Cancel, Cancel{ID: id, Reason: reason})
	if len(h.canceled) == maxRemembered {
		h.canceled = slices.Delete(h.canceled, 0, 1)
	}
	h.canceled = append(h.canceled, id)
}

// cancelOnce emits Cancel(id) unless it was emitted before (as far as the
// Handler remembers).
func (h *Handler) cancelOnce(a *Actions, id int64, reason string) {
	if !slices.Contains(h.canceled, id) {
		h.cancel(a, id, reason)
	}
}

// finish ends every call: it puts Cancel in id order, fires the aligned
// timeout if due, and sets the timer for it otherwise.
func (h *Handler) finish(now int64, a *Actions) {
	slices.SortStableFunc(a.Cancel, func(x, y Cancel) int { return cmp.Compare(x.ID, y.ID) })
	if h.phase != aligning || h.cur.AlignedTimeout <= 0 {
		return
	}
	if h.timedOut(now) {
		h.switchUnaligned(a)
		return
	}
	a.WakeAt = h.deadline()
}

// deadline is the first time at which the aligned timeout of cur fires.
func (h *Handler) deadline() int64 { return h.cur.Timestamp + h.cur.AlignedTimeout + 1 }

func (h *Handler) timedOut(now int64) bool {
	return h.cur.AlignedTimeout > 0 && now-h.cur.Timestamp > h.cur.AlignedTimeout
}
