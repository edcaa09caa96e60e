package network

// ledger is the sender side's credit accounting for one channel. It is pure:
// it decides which buffers may go to the receiver and holds the rest, and its
// caller does the delivery.
//
// Invariant: a buffer is in the backlog only while credit is zero, so buffers
// leave in the order they were added.
type ledger struct {
	credit  int
	backlog []*Buffer // FIFO; head at index 0
	sent    int64     // buffers released to the receiver
}

// add queues b and reports whether it may be delivered now, consuming a credit.
func (l *ledger) add(b *Buffer) (deliverNow bool) {
	if l.credit > 0 && len(l.backlog) == 0 {
		l.credit--
		l.sent++
		return true
	}
	l.backlog = append(l.backlog, b)
	return false
}

// grant adds n credits and returns the backlog buffers that may now be
// delivered, in order. The returned slice is valid until the next call.
func (l *ledger) grant(n int, into []*Buffer) []*Buffer {
	l.credit += n
	k := min(l.credit, len(l.backlog))
	into = append(into[:0], l.backlog[:k]...)
	rest := copy(l.backlog, l.backlog[k:])
	clear(l.backlog[rest:])
	l.backlog = l.backlog[:rest]
	l.credit -= k
	l.sent += int64(k)
	return into
}

// backlogLen is the number of finished buffers waiting for credit.
func (l *ledger) backlogLen() int { return len(l.backlog) }
