package network

import "slices"

// ledger is the sender side's credit accounting for one channel. It is pure:
// it decides which buffers may go to the receiver and holds the rest, and its
// caller does the delivery.
//
// Data buffers cost one credit each (a credit is a free slot at the
// receiver). Events cost none: they only keep their place in the order.
//
// Nothing leaves before the receiver has connected (its first grant opens
// the ledger): until then even events wait in the backlog.
//
// Invariants: buffers leave in the order they were added; once open, a
// non-empty backlog starts with a data buffer and then credit is zero; between
// two other buffers the backlog holds at most one watermark and one watermark
// status (see coalesceProgress), so events in it are bounded by the data buffers.
type ledger struct {
	open    bool // the receiver has connected
	credit  int
	backlog []*Buffer // FIFO; head at index 0
	sent    int64     // buffers (data and events) released to the receiver
}

// add queues b and reports whether it may be delivered now (consuming a
// credit for data). replaced are the watermark events that b made obsolete,
// for the caller to recycle.
func (l *ledger) add(b *Buffer) (deliverNow bool, replaced []*Buffer) {
	if l.open && len(l.backlog) == 0 {
		if b.IsEvent() {
			l.sent++
			return true, nil
		}
		if l.credit > 0 {
			l.credit--
			l.sent++
			return true, nil
		}
	}
	l.backlog, replaced = coalesceProgress(l.backlog, 0, b)
	return false, replaced
}

// grant adds n credits and returns the backlog buffers that may now be
// delivered, in order. The returned slice is valid until the next call.
func (l *ledger) grant(n int, into []*Buffer) []*Buffer {
	l.open = true
	l.credit += n
	k := 0
	for k < len(l.backlog) {
		if !l.backlog[k].IsEvent() {
			if l.credit == 0 {
				break
			}
			l.credit--
		}
		k++
	}
	into = append(into[:0], l.backlog[:k]...)
	rest := copy(l.backlog, l.backlog[k:])
	clear(l.backlog[rest:])
	l.backlog = l.backlog[:rest]
	l.sent += int64(k)
	return into
}

// addPriority queues the priority event b ahead of the backlog's data (behind
// earlier priority events) and reports whether it may go now (once the
// receiver has connected, always). It returns the buffers it
// overtook, still to be delivered after it.
func (l *ledger) addPriority(b *Buffer) (overtaken []*Buffer, deliverNow bool) {
	b.priority = true
	for _, q := range l.backlog {
		if q.IsChannelState() {
			overtaken = append(overtaken, q)
		}
	}
	return overtaken, l.insertPriority(b)
}

// promote turns the aligned barrier of checkpoint id, if it still waits in
// the backlog, into an unaligned priority event (an aligned checkpoint
// timed out on this channel). It returns the barrier, the buffers that
// were ahead of it (they go on after it and are channel state), and
// whether it may go now.
func (l *ledger) promote(id int64) (b *Buffer, overtaken []*Buffer, deliverNow bool) {
	i := slices.IndexFunc(l.backlog, func(q *Buffer) bool { return q.isAlignedBarrier(id) })
	if i < 0 {
		return nil, nil, false
	}
	b = l.backlog[i]
	for _, q := range l.backlog[:i] {
		if q.IsChannelState() {
			overtaken = append(overtaken, q)
		}
	}
	l.backlog = slices.Delete(l.backlog, i, i+1)
	if i > 0 && i < len(l.backlog) && l.backlog[i-1].Kind == KindWatermark && l.backlog[i].Kind == KindWatermark {
		// Keep no two watermarks in a row: the later one supersedes.
		l.backlog = slices.Delete(l.backlog, i-1, i)
	}
	b.promoteBarrier()
	b.priority = true
	return b, overtaken, l.insertPriority(b)
}

// insertPriority queues the priority event b behind earlier priority
// events, or reports that it may go now (the receiver is connected).
func (l *ledger) insertPriority(b *Buffer) bool {
	if l.open {
		l.sent++
		return true
	}
	i := 0
	for i < len(l.backlog) && l.backlog[i].priority {
		i++
	}
	l.backlog = slices.Insert(l.backlog, i, b)
	return false
}

// backlogLen is the number of finished buffers (and events) waiting for credit.
func (l *ledger) backlogLen() int { return len(l.backlog) }
