package heap

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Memory is the budget of the hashmap backend's tables that the stores of
// one TaskManager share (weir.Config.HeapStateMemory). It counts what the
// tables themselves take, slots and control bytes, as they grow: exact for
// entries without pointers, and not what entries point to (strings, list
// elements), nor the pages a checkpoint still holds after a write copied
// them. A growth that would pass the limit fails the subtask at once, with
// a *MemoryError, before the memory is taken.
type Memory struct {
	limit int64
	used  atomic.Int64
}

// NewMemory returns a budget of limit bytes (> 0).
func NewMemory(limit int64) *Memory { return &Memory{limit: limit} }

// Used returns the bytes the stores hold now.
func (m *Memory) Used() int64 { return m.used.Load() }

// take adds n bytes for state, or panics with a *MemoryError, taking
// nothing, if that would pass the limit. Stores of several subtasks take
// at once; a table grows rarely (when it doubles), so the atomic costs
// nothing per record.
func (m *Memory) take(n int64, state string) {
	if used := m.used.Add(n); used > m.limit {
		m.used.Add(-n)
		panic(&MemoryError{State: state, Grow: n, Used: used - n, Limit: m.limit})
	}
}

// MemoryError is the failure of a table's growth past its Memory. Package
// task turns it into the subtask's failure, marked permanent: a restart
// restores the state the job had at its last checkpoint, which grows the
// same way.
type MemoryError struct {
	State             string
	Grow, Used, Limit int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("keyed state %q (hashmap backend): growing its table by %d bytes would take the state tables of this TaskManager past %d bytes, the bound of weir.Config.HeapStateMemory (--heap-state-memory; %d bytes are in use): raise it, or keep the state on disk with the pebble backend (--state-backend pebble)",
		e.State, e.Grow, e.Limit, e.Used)
}

// UseMemory makes the store's tables take their memory from m (nil: no
// bound). Call it before any table is created.
func (s *Store) UseMemory(m *Memory) { s.mem = m }

// Release gives back what the store's tables took from its Memory; the
// store is not used afterwards.
func (s *Store) Release() {
	if s.mem != nil {
		s.mem.used.Add(-s.memTaken)
		s.memTaken = 0
	}
}

// tableBytes is what a table of size slots of entry type E takes: the
// slots and a control byte each.
func tableBytes[E any](size int) int64 {
	return int64(size) * int64(unsafe.Sizeof(slot[E]{})+1)
}

// grow takes n more bytes from the store's Memory for a table of state
// about to grow (n <= 0: nothing).
func (s *Store) grow(state string, n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	s.mem.take(n, state)
	s.memTaken += n
}
