package task

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend"
)

// checkpoint is a task's checkpointing machinery.
type checkpoint struct {
	cfg *Checkpoints
	// seen holds the first barrier of each checkpoint being aligned (its
	// kind and options travel on to the forwarded barrier).
	seen map[int64]network.Barrier
	// alignStart is when the first barrier of the pending checkpoint came.
	alignStart map[int64]int64
	// recs are the unaligned checkpoints whose input channel state is being
	// recorded: the handler's current one, and earlier ones still waiting
	// for buffers their priority barriers overtook.
	recs []*recording
	// outWaits are aligned snapshots whose barriers may still be promoted
	// (see alignedtimeout.go), by checkpoint id.
	outWaits map[int64]*outputWait
	// instance names this task instance's shared files.
	instance string

	mu sync.Mutex // guards uploaded (upload goroutines)
	// uploaded maps, per operator index, a native file name to the shared
	// object holding it, so unchanged files are not uploaded again.
	uploaded []map[string]storage.ObjectHandle
}

func newCheckpoint(cfg *Checkpoints, ops int) *checkpoint {
	var b [8]byte
	rand.Read(b[:])
	c := &checkpoint{cfg: cfg, seen: map[int64]network.Barrier{}, alignStart: map[int64]int64{}, outWaits: map[int64]*outputWait{},
		instance: hex.EncodeToString(b[:]), uploaded: make([]map[string]storage.ObjectHandle, ops)}
	for i := range c.uploaded {
		c.uploaded[i] = map[string]storage.ObjectHandle{}
	}
	return c
}

// recording is the input channel state of an unaligned checkpoint: the data
// that came before each channel's barrier but was not processed before the
// snapshot. What was queued in the gate is copied at once (at the snapshot,
// and when a priority barrier that overtook queued buffers is taken), so
// the checkpoint need not wait until the task has worked through its
// backlog; what arrives later on a channel whose barrier is still to come
// is copied when the task takes it.
type recording struct {
	id       int64
	channels map[int]bool // recorded until their barrier comes
	// copied holds the queued buffers already copied, so that taking them
	// later does not copy them again.
	copied map[*network.Buffer]bool
	data   []byte // frames: channel index u32 (kind in the high byte, see frameKind), length u32, bytes
	// limit bounds len(data) (Checkpoints.ChannelStateMemory; 0: none).
	// Past it the recording drops what it holds and records nothing more
	// (over), and calls exceeded, which declines the checkpoint at once
	// naming the setting.
	limit       int64
	over        bool
	exceeded    func()
	handlerDone bool
	done        chan struct{} // closed once complete or canceled
	closed      bool
	canceled    bool
}

// complete reports whether the recording is over, closing done then.
func (r *recording) complete() bool {
	if r.closed {
		return true
	}
	if !r.canceled && !r.handlerDone {
		return false
	}
	r.closed = true
	close(r.done)
	return true
}

// current is the recording the barrier handler is driving, if any.
func (c *checkpoint) current() *recording {
	if n := len(c.recs); n > 0 && !c.recs[n-1].handlerDone {
		return c.recs[n-1]
	}
	return nil
}

// prune drops the recordings that are over.
func (c *checkpoint) prune() {
	keep := c.recs[:0]
	for _, r := range c.recs {
		if !r.complete() {
			keep = append(keep, r)
		}
	}
	clear(c.recs[len(keep):])
	c.recs = keep
}

// pendingSnapshot is a checkpoint's synchronous part, handed to its upload.
type pendingSnapshot struct {
	id        int64
	unaligned bool
	ops       []opSnapshot
	// output is the channel state of the outputs: per writer, per channel,
	// the overtaken buffers (unaligned only).
	output [][][]network.InFlight
	// input is closed when the input channel state is complete (at once
	// without recording); outputDone (nil: at once) when output is, for an
	// aligned snapshot whose barriers may still be promoted.
	input      <-chan struct{}
	outputDone <-chan struct{}
	rec        *recording
	syncMs     int64
	alignMs    int64
	startedAt  int64 // epoch ms, when the sync part began
	finished   bool  // the task had finished its input
}

// promoted reports whether an aligned snapshot's barriers were promoted on
// an output (it became unaligned there). Read after outputDone.
func (p *pendingSnapshot) promoted() bool {
	for _, chans := range p.output {
		for _, bufs := range chans {
			if bufs != nil {
				return true
			}
		}
	}
	return false
}

type opSnapshot struct {
	operator []byte // encoded operator state; nil if none
	keyed    statebackend.Pending
	timers   []snapshot.Source
	native   bool
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// sourceBarrier is the barrier a source sends for tc at time now. An
// unaligned checkpoint with an aligned timeout starts aligned (the barrier
// carries the timeout), unless the timeout passed before the trigger
// reached the source.
func sourceBarrier(tc protocol.TriggerCheckpoint, now int64) network.Barrier {
	o := tc.Options
	br := network.Barrier{ID: tc.ID, Timestamp: tc.Timestamp, Unaligned: o.Unaligned,
		AtLeastOnce: o.AtLeastOnce, Kind: uint8(o.Kind), Native: o.Native}
	if o.Unaligned && o.AlignedTimeout > 0 && now-tc.Timestamp <= o.AlignedTimeout {
		br.Unaligned, br.AlignedTimeout = false, o.AlignedTimeout
	}
	return br
}

// TriggerCheckpoint asks a source task to take a checkpoint and inject its
// barrier; it runs in the task's mailbox.
func (t *Task) TriggerCheckpoint(tc protocol.TriggerCheckpoint) {
	if !t.Mailbox.Put(func() {
		if t.cp == nil || t.source == nil {
			t.decline(tc.ID, "the task is not a checkpointing source", false)
			return
		}
		if tc.Options.Stop && tc.Options.Drain {
			// --drain: every event-time timer and window fires before the
			// barrier, so the final savepoint holds their output.
			if d, ok := t.source.(operator.Drainer); ok {
				t.current = 0
				d.EmitMaxWatermark()
			}
		}
		t.takeCheckpoint(sourceBarrier(tc, t.spec.Clock.NowMillis()), 0)
		if tc.Options.Stop {
			t.stopAt = tc.ID
		}
	}) {
		// Not inline: the JobManager calls this with its lock held.
		go t.decline(tc.ID, "the task has ended", false)
	}
}

// NotifyCheckpoint tells the task that a checkpoint completed or was
// aborted; it runs in the task's mailbox.
func (t *Task) NotifyCheckpoint(n protocol.NotifyCheckpoint) {
	t.Mailbox.Put(func() {
		for i, op := range t.ops {
			l, ok := op.(operator.CheckpointListener)
			if !ok {
				continue
			}
			t.current = i
			if !n.Complete {
				l.NotifyCheckpointAborted(n.ID)
				continue
			}
			if err := l.NotifyCheckpointComplete(n.ID); err != nil && t.failed == nil {
				t.failed = t.opError(i, fmt.Errorf("completing checkpoint %d: %w", n.ID, err))
			}
		}
		t.spec.Logger.Debug("checkpoint notified", "task", t.name, "checkpoint", n.ID, "complete", n.Complete, "final", n.Final, "terminate", n.Terminate)
		if n.Complete && n.Final {
			t.finalComplete = true
		}
		if n.Complete && n.Terminate {
			t.terminated = true
		}
		if !n.Complete && n.ID == t.stopAt {
			t.stopAt = 0 // the stop failed: the job goes on, as in Flink
		}
	})
}

// DeliverEvent hands an event from an operator's coordinator to the operator.
func (t *Task) DeliverEvent(operatorID string, payload []byte) {
	t.Mailbox.Put(func() {
		for i, ctx := range t.contexts {
			if ctx.OperatorID != operatorID {
				continue
			}
			h, ok := t.ops[i].(operator.EventHandler)
			if !ok {
				break
			}
			t.current = i
			if err := h.HandleOperatorEvent(payload); err != nil && t.failed == nil {
				t.failed = t.opError(i, err)
			}
			return
		}
	})
}

func (t *Task) decline(id int64, reason string, counts bool) {
	t.spec.Reporter.Decline(protocol.DeclineCheckpoint{Exec: t.spec.Exec, ID: id, Reason: reason, Counts: counts})
}

// onBarrier handles a barrier from channel c.
func (t *Task) onBarrier(c *network.InputChannel, b *network.Buffer) {
	br := b.Barrier()
	if t.cp == nil || t.in.handler == nil {
		return
	}
	if _, ok := t.cp.seen[br.ID]; !ok {
		t.cp.seen[br.ID] = br
	}
	now := t.spec.Clock.NowMillis()
	acts := t.in.handler.Barrier(now, c.Index, barrier.Barrier{ID: br.ID, Timestamp: br.Timestamp,
		Unaligned: br.Unaligned, AlignedTimeout: br.AlignedTimeout})
	// A priority barrier overtook b.Overtaken buffers queued in the channel:
	// they come before it, so they belong to the channel state of its
	// checkpoint (counted before Done can complete the recording).
	t.applyBarrierActionsWith(acts, overtaken{id: br.ID, channel: c.Index, n: b.Overtaken})
}

// overtaken says that the barrier of checkpoint id overtook n data buffers
// queued in a channel.
type overtaken struct {
	id         int64
	channel, n int
}

func (t *Task) applyBarrierActions(a barrier.Actions) { t.applyBarrierActionsWith(a, overtaken{}) }

// applyBarrierActionsWith carries out the barrier handler's decisions in the
// order its package documents; ov (if n > 0) is added to the recording of
// its checkpoint once that exists, before Done.
func (t *Task) applyBarrierActionsWith(a barrier.Actions, ov overtaken) {
	if a.AlignmentStart != 0 && t.cp != nil {
		for id := range t.cp.seen {
			if _, ok := t.cp.alignStart[id]; !ok {
				t.cp.alignStart[id] = a.AlignmentStart
			}
		}
	}
	for _, c := range a.Cancel {
		for _, r := range t.cp.recs {
			if r.id == c.ID {
				r.canceled = true
			}
		}
		t.cp.prune()
		delete(t.cp.seen, c.ID)
		delete(t.cp.alignStart, c.ID)
		t.decline(c.ID, c.Reason, false)
		for _, w := range t.writers {
			w.CancelCheckpoint(c.ID)
		}
	}
	if s := a.Snapshot; s != nil {
		br, ok := t.cp.seen[s.ID]
		if !ok {
			br = network.Barrier{ID: s.ID, Timestamp: s.Timestamp}
		}
		br.Unaligned = s.Unaligned
		alignMs := int64(0)
		if st, ok := t.cp.alignStart[s.ID]; ok {
			alignMs = t.spec.Clock.NowMillis() - st
		}
		delete(t.cp.seen, s.ID)
		delete(t.cp.alignStart, s.ID)
		t.takeCheckpoint(br, alignMs)
	}
	chans := t.spec.Gate.Channels()
	if ov.n > 0 {
		for _, r := range t.cp.recs {
			if r.id == ov.id && !r.canceled {
				r.copyQueued(chans[ov.channel], ov.n)
			}
		}
	}
	if r := t.cp.current(); r != nil {
		for _, ch := range a.Record {
			r.channels[ch] = true
			r.copyQueued(chans[ch], -1)
			// An aligned barrier of this checkpoint queued behind data
			// (the checkpoint switched to unaligned) now overtakes it,
			// so the recording need not wait for the data to be read.
			chans[ch].PromoteBarrier(r.id)
		}
		for _, ch := range a.StopRecording {
			delete(r.channels, ch)
		}
		if a.Done != nil && *a.Done == r.id {
			r.handlerDone = true
			t.cp.prune()
		}
	}
	for _, ch := range a.Block {
		t.spec.Gate.Block(chans[ch])
	}
	for _, ch := range a.Unblock {
		t.spec.Gate.Unblock(chans[ch])
	}
	t.in.barrierWake = a.WakeAt
}

// recordInput keeps a copy of a data buffer, watermark or status taken
// from channel ch if it is channel state of an unaligned checkpoint being
// recorded and was not copied while queued.
func (t *Task) recordInput(ch int, b *network.Buffer) {
	if t.cp == nil || len(t.cp.recs) == 0 {
		return
	}
	for _, r := range t.cp.recs {
		if r.copied[b] {
			delete(r.copied, b)
		} else if r.channels[ch] {
			r.add(ch, b.Kind, b.Data)
		}
	}
}

// copyQueued copies the buffers queued in channel c that precede the
// channel's barrier of r's checkpoint and are channel state (data,
// watermarks and statuses, network.Buffer.IsChannelState) into r: the
// first n (a priority barrier overtook n), or with n < 0 those before the
// first barrier (of this or a later checkpoint), cancel marker or end of
// the channel, and no more than a queued priority barrier overtook.
func (r *recording) copyQueued(c *network.InputChannel, n int) {
	queue, prio := c.QueuedBuffers()
	for _, b := range queue[:prio] {
		if b.Kind == network.KindBarrier && b.Barrier().ID >= r.id && (n < 0 || b.Overtaken < n) {
			n = b.Overtaken
		}
	}
queue:
	for _, b := range queue[prio:] {
		if n == 0 {
			break
		}
		switch b.Kind {
		case network.KindData, network.KindWatermark, network.KindWatermarkStatus:
			if !r.copied[b] {
				r.copied[b] = true
				r.add(c.Index, b.Kind, b.Data)
			}
			n--
			continue
		case network.KindBarrier:
			if b.Barrier().ID < r.id {
				continue
			}
		}
		break queue
	}
}

// add appends a buffer of channel ch to the recording: data, or a
// watermark or status (kind).
func (r *recording) add(ch int, kind network.Kind, data []byte) {
	if r.over {
		return
	}
	if r.limit > 0 && int64(len(r.data)+8+len(data)) > r.limit {
		r.over, r.data = true, nil
		if r.exceeded != nil {
			r.exceeded()
		}
		return
	}
	r.data = binary.BigEndian.AppendUint32(r.data, uint32(ch)|uint32(kind)<<frameKindShift)
	r.data = binary.BigEndian.AppendUint32(r.data, uint32(len(data)))
	r.data = append(r.data, data...)
}

// recordTakenIn adds to r what the task took in from its channels but has
// not processed: a record spanning buffers whose start arrived before the
// snapshot, and the rest of the buffer being read. Both precede the
// barrier in their channel, so they are channel state, and they come
// first in it.
func (t *Task) recordTakenIn(r *recording) {
	for _, c := range t.gateChannels() {
		if u := t.readers[c.Input].Unconsumed(c.Channel); u != nil {
			r.add(c.Index, network.KindData, u)
		}
		if c == t.in.curCh {
			r.add(c.Index, network.KindData, t.in.cur.Data[t.in.curPos:])
		}
	}
}

// takeCheckpoint is a checkpoint's synchronous part: operators write their
// own state into their stores, the stores and keyed backends freeze, the
// barrier goes out on every output, and the upload starts on its own
// goroutine.
func (t *Task) takeCheckpoint(br network.Barrier, alignMs int64) {
	start := t.spec.Clock.Now()
	snap := &pendingSnapshot{id: br.ID, unaligned: br.Unaligned, ops: make([]opSnapshot, len(t.ops)),
		input: closedChan, alignMs: alignMs, startedAt: start.UnixMilli()}
	if err := t.snapshotOperators(br, snap); err != nil {
		snap.release()
		t.decline(br.ID, err.Error(), true)
		for _, w := range t.writers {
			w.CancelCheckpoint(br.ID)
		}
		return
	}
	if !br.Unaligned && !br.AtLeastOnce && br.AlignedTimeout > 0 {
		t.alignedBarrier(br, snap)
	} else {
		for _, w := range t.writers {
			over := w.Barrier(br, nil)
			if br.Unaligned {
				snap.output = append(snap.output, over)
			}
		}
	}
	if br.Unaligned && t.source == nil {
		r := t.newRecording(br.ID)
		t.recordTakenIn(r)
		t.cp.recs = append(t.cp.recs, r)
		snap.rec, snap.input = r, r.done
	}
	snap.finished = t.finished
	snap.syncMs = t.spec.Clock.Now().Sub(start).Milliseconds()
	t.spec.Logger.Debug("checkpoint taken", "task", t.name, "checkpoint", br.ID, "unaligned", br.Unaligned,
		"kind", protocol.CheckpointKind(br.Kind), "finished", t.finished)
	t.asyncWG.Add(1)
	go t.upload(snap)
}

// newRecording starts the recording of unaligned checkpoint id's input
// channel state, bounded by ChannelStateMemory: the checkpoint is declined
// as soon as the bound is passed, not once the recording ends (when the
// last of its barriers comes, which a backpressured channel can put off
// for long).
func (t *Task) newRecording(id int64) *recording {
	r := &recording{id: id, channels: map[int]bool{}, copied: map[*network.Buffer]bool{}, done: make(chan struct{}),
		limit: t.cp.cfg.ChannelStateMemory}
	r.exceeded = func() {
		t.decline(id, fmt.Sprintf("task %s: the input channel state of unaligned checkpoint %d passed %d bytes, the bound of "+
			"CheckpointConfig.ChannelStateMemory (--channel-state-memory): raise it, or give the job fewer network buffers in flight",
			t.name, id, r.limit), true)
	}
	return r
}

// snapshotOperators runs the operators' Snapshotter hooks and freezes their
// state stores.
func (t *Task) snapshotOperators(br network.Barrier, snap *pendingSnapshot) error {
	id := br.ID
	for i, op := range t.ops {
		if s, ok := op.(operator.Snapshotter); ok {
			t.current = i
			if err := s.SnapshotState(id); err != nil {
				return fmt.Errorf("operator %q: %w", t.contexts[i].OperatorName, err)
			}
		}
	}
	for i, st := range t.states {
		enc, err := st.store.Snapshot()
		if err != nil {
			return fmt.Errorf("operator %q: operator state: %w", t.contexts[i].OperatorName, err)
		}
		snap.ops[i].operator = enc
		if st.keyed == nil {
			continue
		}
		// Checkpoints are native when incremental; savepoints are canonical
		// (restorable into any backend) unless the user asked for native.
		native := t.cp.cfg.Incremental
		if protocol.CheckpointKind(br.Kind) == protocol.Savepoint {
			native = br.Native
		}
		kind := statebackend.Canonical
		if native && t.spec.StateBackend == statebackend.KindPebble {
			kind = statebackend.Native
		}
		p, err := st.keyed.Backend.Snapshot(id, kind)
		if err != nil {
			return fmt.Errorf("operator %q: keyed state: %w", t.contexts[i].OperatorName, err)
		}
		snap.ops[i].keyed, snap.ops[i].native = p, kind == statebackend.Native
		snap.ops[i].timers = st.keyed.Timers.Snapshot()
	}
	return nil
}

func (p *pendingSnapshot) release() {
	for _, o := range p.ops {
		if o.keyed != nil {
			o.keyed.Release()
		}
	}
}

// upload is a checkpoint's asynchronous part: it waits for the input
// channel state (unaligned), writes everything to the checkpoint storage,
// and acknowledges, or declines on failure.
func (t *Task) upload(snap *pendingSnapshot) {
	defer t.asyncWG.Done()
	for _, c := range []<-chan struct{}{snap.input, snap.outputDone} {
		if c == nil {
			continue
		}
		select {
		case <-c:
		case <-t.asyncCtx.Done():
			snap.release()
			return
		}
	}
	if snap.rec != nil && (snap.rec.canceled || snap.rec.over) {
		// Over: declined when it passed the bound (newRecording).
		snap.release()
		return
	}
	start := t.spec.Clock.Now()
	ack, err := t.write(snap)
	snap.release()
	if err != nil {
		if t.asyncCtx.Err() == nil {
			t.decline(snap.id, fmt.Sprintf("task %s: writing checkpoint %d: %v", t.name, snap.id, err), true)
		}
		return
	}
	ack.Metrics.SyncMillis = snap.syncMs
	ack.Metrics.AlignmentMillis = snap.alignMs
	ack.Metrics.AsyncMillis = t.spec.Clock.Now().Sub(start).Milliseconds()
	ack.Metrics.Unaligned = snap.unaligned || snap.promoted()
	ack.Metrics.Finished = snap.finished
	ack.Metrics.AckMillis = t.spec.Clock.NowMillis()
	t.spec.Reporter.Acknowledge(ack)
}

// objectKey names one of this subtask's objects in checkpoint id.
func (t *Task) objectKey(id int64, opID, what string) string {
	return storage.CheckpointPrefix(t.spec.Exec.Job, id) + fmt.Sprintf("%s-%d-%s", opID, t.spec.Exec.Subtask, what)
}

// write uploads a snapshot and returns the acknowledgement describing it.
func (t *Task) write(snap *pendingSnapshot) (protocol.AcknowledgeCheckpoint, error) {
	ctx, store := t.asyncCtx, t.cp.cfg.Store
	ack := protocol.AcknowledgeCheckpoint{Exec: t.spec.Exec, ID: snap.id}
	for i, o := range snap.ops {
		opID := t.contexts[i].OperatorID
		ss := storage.SubtaskState{Subtask: t.spec.Exec.Subtask}
		var shared []string
		if o.operator != nil {
			ack.Metrics.Bytes += int64(len(o.operator))
			ack.Metrics.PersistedBytes += int64(len(o.operator))
			if len(o.operator) <= storage.InlineLimit {
				ss.Inline = o.operator
			} else {
				h, err := storage.PutObject(ctx, store, t.objectKey(snap.id, opID, "operator"), o.operator)
				if err != nil {
					return ack, err
				}
				ss.Operator = &h
			}
		}
		if o.keyed != nil {
			kh, sh, size, persisted, err := t.writeKeyed(snap.id, i, o)
			if err != nil {
				return ack, err
			}
			ss.Keyed = []storage.KeyedHandle{kh}
			shared = sh
			ack.Metrics.Bytes += size
			ack.Metrics.PersistedBytes += persisted
		}
		if i == 0 && (snap.unaligned || snap.outputDone != nil) {
			// Unaligned from the start, or aligned with barriers that
			// were promoted on an output (alignedtimeout.go).
			in, out, n, err := t.writeChannelState(snap)
			if err != nil {
				return ack, err
			}
			ss.InputChannels, ss.OutputChannels = in, out
			ack.Metrics.Bytes += n
			ack.Metrics.PersistedBytes += n
		}
		if ss.Inline == nil && ss.Operator == nil && len(ss.Keyed) == 0 && len(ss.InputChannels)+len(ss.OutputChannels) == 0 {
			continue
		}
		ack.Operators = append(ack.Operators, protocol.OperatorSnapshot{OperatorID: opID, State: ss, Shared: shared})
	}
	return ack, nil
}

// writeKeyed uploads one operator's keyed state: a canonical snapshot (with
// the timers in it), or a native Pebble checkpoint whose files are uploaded
// only when this task has not uploaded them before.
func (t *Task) writeKeyed(id int64, i int, o opSnapshot) (kh storage.KeyedHandle, shared []string, size, persisted int64, err error) {
	ctx, store := t.asyncCtx, t.cp.cfg.Store
	opID := t.contexts[i].OperatorID
	rng := t.states[i].keyed.Range
	kh.KeyGroupStart, kh.KeyGroupEnd = rng.Start, rng.End
	if !o.native {
		w, err := storage.NewObjectWriter(ctx, store, t.objectKey(id, opID, "keyed"))
		if err != nil {
			return kh, nil, 0, 0, err
		}
		if _, err := o.keyed.Materialize(w, o.timers...); err != nil {
			w.Close()
			return kh, nil, 0, 0, err
		}
		if err := w.Close(); err != nil {
			return kh, nil, 0, 0, err
		}
		kh.Kind, kh.Object = storage.KindCanonical, w.Handle()
		return kh, nil, kh.Object.Size, kh.Object.Size, nil
	}
	h, err := o.keyed.Materialize(nil)
	if err != nil {
		return kh, nil, 0, 0, err
	}
	defer os.RemoveAll(h.Dir)
	kh.Kind = storage.KindNative
	for _, f := range h.Files {
		size += f.Size
		isSST := filepath.Ext(f.Name) == ".sst"
		if isSST {
			t.cp.mu.Lock()
			prev, ok := t.cp.uploaded[i][f.Name]
			t.cp.mu.Unlock()
			if ok {
				kh.Files = append(kh.Files, storage.NativeFile{Name: f.Name, Object: prev, Shared: true})
				shared = append(shared, prev.Key)
				continue
			}
		}
		key := t.objectKey(id, opID, "native-"+f.Name)
		if isSST {
			key = storage.SharedKey(t.spec.Exec.Job, fmt.Sprintf("%s-%d-%s-%s", opID, t.spec.Exec.Subtask, t.cp.instance, f.Name))
		}
		// An SST is immutable: a file store on the same file system
		// links it (storage.PutFile).
		oh, err := storage.PutFile(ctx, store, key, filepath.Join(h.Dir, f.Name), isSST)
		if err != nil {
			return kh, nil, 0, 0, err
		}
		persisted += oh.Size
		kh.Files = append(kh.Files, storage.NativeFile{Name: f.Name, Object: oh, Shared: isSST})
		if isSST {
			shared = append(shared, oh.Key)
			t.cp.mu.Lock()
			t.cp.uploaded[i][f.Name] = oh
			t.cp.mu.Unlock()
		}
	}
	// Timers are not in Pebble: they go beside it as a canonical snapshot.
	w, err := storage.NewObjectWriter(ctx, store, t.objectKey(id, opID, "timers"))
	if err != nil {
		return kh, nil, 0, 0, err
	}
	hdr := snapshot.Header{MaxParallelism: t.spec.MaxParallelism, Range: rng, CheckpointID: id}
	if _, err := snapshot.Write(w, hdr, o.timers); err != nil {
		w.Close()
		return kh, nil, 0, 0, err
	}
	if err := w.Close(); err != nil {
		return kh, nil, 0, 0, err
	}
	th := w.Handle()
	kh.Timers = &th
	return kh, shared, size + th.Size, persisted + th.Size, nil
}

// Channel state objects are frames: index u32, channel u32, length u32,
// bytes. For input state the index is the gate channel's Index (channel
// 0); for output state the writer's index and the subpartition. The
// index's high byte is the frame's kind (frameKind): 0 for data (so
// older checkpoints read alike), else a watermark or status that was in
// flight among the data.
func (t *Task) writeChannelState(snap *pendingSnapshot) (in, out []storage.ObjectHandle, n int64, err error) {
	ctx, store := t.asyncCtx, t.cp.cfg.Store
	opID := t.contexts[0].OperatorID
	if snap.rec != nil && len(snap.rec.data) > 0 {
		var frames []byte
		for d := snap.rec.data; len(d) >= 8; {
			ch, l := binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:])
			frames = appendFrame(frames, ch, 0, d[8:8+l])
			d = d[8+l:]
		}
		h, err := storage.PutObject(ctx, store, t.objectKey(snap.id, opID, "input-channels"), frames)
		if err != nil {
			return nil, nil, 0, err
		}
		in, n = append(in, h), n+h.Size
	}
	var frames []byte
	for wi, chans := range snap.output {
		for ch, bufs := range chans {
			for _, b := range bufs {
				frames = appendFrame(frames, uint32(wi)|uint32(b.Kind)<<frameKindShift, uint32(ch), b.Data)
			}
		}
	}
	if len(frames) > 0 {
		h, err := storage.PutObject(ctx, store, t.objectKey(snap.id, opID, "output-channels"), frames)
		if err != nil {
			return nil, nil, 0, err
		}
		out, n = append(out, h), n+h.Size
	}
	return in, out, n, nil
}

// frameKindShift places a frame's network.Kind in the high byte of its
// index.
const frameKindShift = 24

// frameKind splits a frame's index into the index and the kind of buffer
// the frame holds.
func frameKind(index int) (int, network.Kind) {
	return index & (1<<frameKindShift - 1), network.Kind(index >> frameKindShift)
}

func appendFrame(dst []byte, index, channel uint32, b []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, index)
	dst = binary.BigEndian.AppendUint32(dst, channel)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// frames decodes channel state frames.
func frames(d []byte, fn func(index, channel int, b []byte) error) error {
	for len(d) > 0 {
		if len(d) < 12 {
			return errors.New("channel state: truncated frame header")
		}
		idx, ch, l := binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), binary.BigEndian.Uint32(d[8:])
		if uint64(l) > uint64(len(d)-12) {
			return errors.New("channel state: truncated frame")
		}
		if err := fn(int(idx), int(ch), d[12:12+l]); err != nil {
			return err
		}
		d = d[12+l:]
	}
	return nil
}

func sourceEnded(e protocol.ExecutionID) protocol.SourceEnded { return protocol.SourceEnded{Exec: e} }
