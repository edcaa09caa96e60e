package task

import (
	"sync"
	"sync/atomic"
)

// Mailbox queues actions for the task goroutine. Any goroutine may Put; only
// the task goroutine runs them, between records, so actions may touch
// operator state without locks.
type Mailbox struct {
	mu      sync.Mutex // guards actions and closed
	actions []func()
	closed  bool        // the task loop ended: nothing runs any more
	pending atomic.Bool // actions is non-empty; checked without the lock per loop turn
	notify  chan struct{}
	spare   []func()
	// interrupt, if set, is set by Put so that a task in the middle of a
	// buffer stops after the current record to run the action.
	interrupt *atomic.Bool
}

// NewMailbox returns an empty mailbox.
func NewMailbox() *Mailbox { return &Mailbox{notify: make(chan struct{}, 1)} }

// Put queues an action; it reports false when the task has ended and the
// action will never run.
func (m *Mailbox) Put(f func()) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.actions = append(m.actions, f)
	m.pending.Store(true)
	m.mu.Unlock()
	if m.interrupt != nil {
		m.interrupt.Store(true)
	}
	select {
	case m.notify <- struct{}{}:
	default:
	}
	return true
}

// close refuses further actions and drops the queued ones.
func (m *Mailbox) close() {
	m.mu.Lock()
	m.closed = true
	m.actions = nil
	m.mu.Unlock()
}

// run runs every queued action in order.
func (m *Mailbox) run() {
	if !m.pending.Load() {
		return
	}
	m.mu.Lock()
	batch := m.actions
	m.actions = m.spare[:0]
	m.pending.Store(false)
	m.mu.Unlock()
	for i, f := range batch {
		batch[i] = nil
		f()
	}
	m.spare = batch[:0]
}
