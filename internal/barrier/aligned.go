package barrier

import "fmt"

// Exactly-once: one checkpoint at a time (cur), as Flink's
// SingleCheckpointBarrierHandler. Obsolescence needs only latest: barriers and
// cancel markers come in increasing id order on each channel, so once the
// Handler has moved on to latest (completing it, canceling it, or hearing of
// it in a cancel marker) nothing older can complete any more.

func (h *Handler) alignBarrier(now int64, ch int, b Barrier, a *Actions) {
	if b.ID < h.latest || (b.ID == h.latest && h.phase == idle) {
		return // obsolete: done, canceled, or subsumed
	}
	if b.ID > h.latest {
		if h.phase != idle {
			h.cancelPending(a, fmt.Sprintf("checkpoint %d subsumed by a newer barrier %d", h.cur.ID, b.ID))
		}
		h.latest = b.ID
		h.cur = b
		h.cur.Unaligned = false // set by switchUnaligned
		h.phase = aligning
		h.missing = h.live
		a.AlignmentStart = now
	}
	c := &h.channels[ch]
	if c.received {
		panic(fmt.Sprintf("barrier: second barrier of checkpoint %d from channel %d", b.ID, ch))
	}
	c.received = true
	h.missing--
	if h.phase == aligning {
		switch {
		case b.Unaligned:
			// Unaligned from the start, or an upstream timed out: the
			// checkpoint is unaligned from here on, even if this barrier
			// is the last one (as Flink's alternating handler does).
			h.switchUnaligned(a)
		case h.missing == 0:
			h.completeAligned(a)
			return
		case h.timedOut(now):
			h.switchUnaligned(a)
		default:
			c.blocked = true
			a.Block = append(a.Block, ch)
			return
		}
	}
	// recording
	if c.recording {
		c.recording = false
		a.StopRecording = append(a.StopRecording, ch)
	}
	h.completeIfDone(a)
}

func (h *Handler) alignCancel(ch int, id int64, a *Actions) {
	switch {
	case id < h.latest || (id == h.latest && h.phase == idle):
		// Done, or canceled (and its marker forwarded) already.
	case id == h.latest:
		h.cancelPending(a, fmt.Sprintf("cancel marker for checkpoint %d on channel %d", id, ch))
	default:
		if h.phase != idle {
			h.cancelPending(a, fmt.Sprintf("checkpoint %d subsumed by a cancel marker for %d on channel %d", h.cur.ID, id, ch))
		}
		h.latest = id
		h.cancel(a, id, fmt.Sprintf("cancel marker for checkpoint %d on channel %d", id, ch))
	}
}

func (h *Handler) alignEnd(ch int, a *Actions) {
	c := &h.channels[ch]
	if h.phase == idle || c.received {
		return
	}
	h.missing--
	if c.recording {
		c.recording = false
		a.StopRecording = append(a.StopRecording, ch)
	}
	if h.phase == aligning && h.missing == 0 {
		h.completeAligned(a)
		return
	}
	h.completeIfDone(a)
}

func (h *Handler) alignAbort(id int64, reason string, a *Actions) {
	switch {
	case h.phase != idle && id == h.latest:
		h.cancelPending(a, reason)
	case id > h.latest:
		if h.phase != idle {
			h.cancelPending(a, fmt.Sprintf("checkpoint %d subsumed by the abort of %d", h.cur.ID, id))
		}
		h.latest = id
		h.cancel(a, id, reason)
	default:
		h.cancelOnce(a, id, reason)
	}
}

// switchUnaligned turns cur unaligned: snapshot now, release the blocked
// channels (their later data is after the barrier) and record the others.
func (h *Handler) switchUnaligned(a *Actions) {
	h.phase = recording
	h.cur.Unaligned = true
	a.Snapshot = &Snapshot{ID: h.cur.ID, Unaligned: true, Timestamp: h.cur.Timestamp, AlignedTimeout: h.cur.AlignedTimeout}
	for i := range h.channels {
		c := &h.channels[i]
		switch {
		case c.blocked:
			c.blocked = false
			a.Unblock = append(a.Unblock, i)
		case !c.received && !c.ended:
			c.recording = true
			a.Record = append(a.Record, i)
		}
	}
}

// completeAligned snapshots cur once every channel delivered its barrier.
func (h *Handler) completeAligned(a *Actions) {
	a.Snapshot = &Snapshot{ID: h.cur.ID, Timestamp: h.cur.Timestamp, AlignedTimeout: h.cur.AlignedTimeout}
	id := h.cur.ID
	a.Done = &id
	h.reset(a)
}

// completeIfDone ends recording once every channel delivered the barrier.
func (h *Handler) completeIfDone(a *Actions) {
	if h.phase == recording && h.missing == 0 {
		id := h.cur.ID
		a.Done = &id
		h.reset(a)
	}
}

// cancelPending gives up on cur; any recording stops with the Cancel.
func (h *Handler) cancelPending(a *Actions, reason string) {
	h.cancel(a, h.cur.ID, reason)
	h.reset(a)
}

// reset returns to idle, unblocking what alignment blocked.
func (h *Handler) reset(a *Actions) {
	for i := range h.channels {
		c := &h.channels[i]
		if c.blocked {
			a.Unblock = append(a.Unblock, i)
		}
		c.received, c.blocked, c.recording = false, false, false
	}
	h.phase = idle
	h.missing = 0
}
