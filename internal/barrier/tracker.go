package barrier

import (
	"fmt"
	"slices"
)

// At-least-once: several checkpoints tracked at once, as Flink's
// CheckpointBarrierTracker, nothing blocked. A tracked checkpoint is dropped
// as soon as it can no longer complete: when some channel that has not
// delivered its barrier delivers a newer barrier or cancel marker (ids
// increase on each channel, so that channel will never deliver it).

func (h *Handler) trackBarrier(now int64, ch int, b Barrier, a *Actions) {
	id := b.ID
	h.passBy(ch, id, a, fmt.Sprintf("a newer barrier %d", id))
	t := h.find(id)
	if t == nil {
		if id <= h.latest {
			return // obsolete: done, dropped, or canceled before its first barrier
		}
		t = h.track(id, a)
		t.first = b
		a.AlignmentStart = now
	}
	if t.received[ch] {
		panic(fmt.Sprintf("barrier: second barrier of checkpoint %d from channel %d", id, ch))
	}
	t.received[ch] = true
	t.missing--
	h.completeTracked(a)
}

func (h *Handler) trackCancel(ch int, id int64, a *Actions) {
	h.passBy(ch, id, a, fmt.Sprintf("a cancel marker for %d", id))
	reason := fmt.Sprintf("cancel marker for checkpoint %d on channel %d", id, ch)
	t := h.find(id)
	if t == nil {
		if id <= h.latest {
			return // done, dropped, or canceled (and its marker forwarded) already
		}
		t = h.track(id, a)
	}
	if !t.aborted {
		t.aborted = true
		h.cancel(a, id, reason)
	}
	// Count the marker as the channel's barrier, so that the entry goes
	// once every channel has passed it. A marker after the channel's
	// barrier (its upstream gave up after snapshotting) counts nothing.
	if !t.received[ch] {
		t.received[ch] = true
		t.missing--
	}
	h.completeTracked(a)
}

func (h *Handler) trackEnd(ch int, a *Actions) {
	for _, t := range h.pending {
		if !t.received[ch] {
			t.missing--
		}
	}
	h.completeTracked(a)
}

func (h *Handler) trackAbort(id int64, reason string, a *Actions) {
	t := h.find(id)
	switch {
	case t != nil:
		if !t.aborted {
			t.aborted = true
			h.cancel(a, id, reason)
		}
	case id > h.latest:
		t = h.track(id, a)
		t.aborted = true
		h.cancel(a, id, reason)
		h.completeTracked(a) // no live channel: nothing to wait for
	default:
		h.cancelOnce(a, id, reason)
	}
}

// track starts tracking id > latest, giving up on the oldest tracked
// checkpoint beyond maxTracked.
func (h *Handler) track(id int64, a *Actions) *tracked {
	h.latest = id
	t := &tracked{id: id, received: make([]bool, len(h.channels)), missing: h.live}
	h.pending = append(h.pending, t)
	if len(h.pending) > h.maxTracked {
		old := h.pending[0]
		h.pending = slices.Delete(h.pending, 0, 1)
		if !old.aborted {
			h.cancel(a, old.id, fmt.Sprintf("checkpoint %d dropped: more than %d checkpoints pending", old.id, h.maxTracked))
		}
	}
	return t
}

func (h *Handler) find(id int64) *tracked {
	for _, t := range h.pending {
		if t.id == id {
			return t
		}
	}
	return nil
}

// passBy drops the tracked checkpoints older than id that channel ch has not
// delivered: it has just passed them.
func (h *Handler) passBy(ch int, id int64, a *Actions, what string) {
	h.pending = slices.DeleteFunc(h.pending, func(t *tracked) bool {
		if t.id >= id || t.received[ch] {
			return false
		}
		if !t.aborted {
			h.cancel(a, t.id, fmt.Sprintf("checkpoint %d subsumed by %s on channel %d", t.id, what, ch))
		}
		return true
	})
}

// completeTracked removes the tracked checkpoints every live channel has
// delivered and snapshots the newest of them that was not aborted. More
// than one completes at once only when a channel ends: the older ones are
// then subsumed by the newest.
func (h *Handler) completeTracked(a *Actions) {
	var newest *tracked
	for _, t := range h.pending {
		if t.missing == 0 && !t.aborted {
			newest = t
		}
	}
	h.pending = slices.DeleteFunc(h.pending, func(t *tracked) bool {
		if t.missing > 0 {
			return false
		}
		if !t.aborted && t != newest {
			h.cancel(a, t.id, fmt.Sprintf("checkpoint %d subsumed by checkpoint %d", t.id, newest.id))
		}
		return true
	})
	if newest != nil {
		a.Snapshot = &Snapshot{ID: newest.id, Timestamp: newest.first.Timestamp, AlignedTimeout: newest.first.AlignedTimeout}
		id := newest.id
		a.Done = &id
	}
}
