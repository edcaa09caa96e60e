// Package barrier decides what one task does with the checkpoint barriers,
// cancel markers and ends of partition that come out of its input gate: the
// part of Flink's SingleCheckpointBarrierHandler (with its BarrierHandlerState
// family) and CheckpointBarrierTracker that is logic rather than plumbing.
//
// A Handler is a deterministic state machine. It does no I/O, reads no clock
// and starts no goroutines: the task goroutine feeds it events together with
// the current time (epoch ms) and applies the Actions it returns. It owns,
// for one task and over all its input channels:
//   - which checkpoint is pending and which channels have delivered its
//     barrier (exactly-once: one checkpoint at a time; at-least-once: up to
//     50 at once);
//   - which channels are blocked for alignment, and which are recorded as
//     channel state of an unaligned checkpoint;
//   - the aligned-checkpoint timeout, as a deadline (Actions.WakeAt) the
//     caller turns into a timer that calls Tick;
//   - which checkpoints it gave up on, so that each is declined and its cancel
//     marker forwarded once.
//
// It does not own the buffers, the snapshot, the channel state's storage, the
// barrier forwarding or the decline message: those are the caller's, told by
// Actions.
//
// # Applying Actions
//
// The caller applies every field of one Actions before it takes the next
// buffer or event from its input gate, in this order:
//
//  1. Cancel, in slice order: for each, if its ID is the unaligned checkpoint
//     whose channel state is being recorded, stop recording every channel and
//     discard that channel state; decline the checkpoint to the coordinator;
//     forward a cancel marker for it downstream.
//  2. Snapshot: take the task's snapshot (the synchronous part), then emit the
//     barrier on every output before any later record; when Unaligned, emit it
//     as a priority event that overtakes the queued output buffers, which
//     become part of the channel state.
//  3. Record: from now on, persist every data buffer taken from these
//     channels as channel state of the Snapshot's checkpoint.
//  4. StopRecording: the channel state of these channels is complete.
//  5. Done: the checkpoint's channel state is complete on every channel; the
//     task may acknowledge once its snapshot is written too.
//  6. Block: take nothing more from these channels (their later buffers and
//     events wait in the channel).
//  7. Unblock: take from these channels again.
//  8. WakeAt: arm the one alignment timer to call Tick at that time (epoch
//     ms); 0 disarms it. Every Actions carries the current deadline, so the
//     caller can simply re-arm after each call.
//
// AlignmentStart is a metric only and can be recorded at any point.
//
// The caller must never hand the Handler anything from a channel that is
// blocked or has ended: Barrier, CancelMarker and EndOfPartition panic on
// that, as on a second barrier of one checkpoint from one channel. These are
// programmer errors (a wrong caller or a wrong upstream), not conditions.
//
// # Differences from Flink
//
//   - At-least-once gives up on a checkpoint as soon as some channel passes
//     it (delivers a newer barrier or cancel marker without its barrier),
//     and declines it with a Cancel. Flink's CheckpointBarrierTracker keeps
//     it until a newer one completes (or 50 are pending) and then drops it
//     silently; a cancel marker there drops every older checkpoint, here
//     only those the marker's channel had not delivered. When an end of
//     partition completes several checkpoints at once, the newest is
//     snapshotted and the older ones are canceled as subsumed.
//   - Exactly-once, a cancel marker (or Abort) for a newer checkpoint while
//     one is pending cancels both, so each is declined; Flink notifies only
//     the newer one.
//   - Abort (the task's own failure) forwards a cancel marker too, so that
//     downstream tasks still aligning or recording that checkpoint stop.
//   - An end of partition counts as every later barrier (Flink since
//     FLIP-147); older Flink declined the pending checkpoint instead.
//   - The handler knows nothing of barrier announcements. Its own timeout
//     covers barriers that reached it; a barrier still queued behind data
//     when the timeout passes is promoted by the task (internal/task,
//     alignedtimeout.go) to a priority event at the head of its channel,
//     and arrives here as an unaligned barrier: the same outcome as
//     Flink's announcement, with the buffers it overtook handed over by
//     the network layer as channel state.
//
// Barriers are assumed to arrive in order on each channel, after the data
// that preceded them upstream. An unaligned (priority or promoted) barrier
// that overtakes buffers already queued in an input channel carries their
// count (network.Buffer.Overtaken); the task copies those buffers into the
// channel state itself, since they come out of the gate after the barrier.
package barrier
