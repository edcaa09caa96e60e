package heap

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/weirhq/weir/internal/snapshot"
)

// Memory is the budget of the hashmap backend's keyed state that the
// stores of one TaskManager share (weir.Config.HeapStateMemory). It counts
//
//   - what the tables take, slots and control bytes (and, for values that
//     hold pointers, a size word per slot), as they grow;
//   - what values point to (strings, slices, list elements, map state's
//     maps), measured by the rule of measureOf when a write is settled
//     (see Table.settle), and long keys' bytes;
//   - what a checkpoint still holds after the task copied it away (a page
//     of slots, a key group's control words, a value cloned before a
//     write, an entry deleted), from the copy until the snapshot is
//     released (Store.Freeze).
//
// A growth that would pass the limit fails the subtask at once, with a
// *MemoryError, before the memory is taken. The timers of keyed operators
// on this backend (internal/timers) take from the same Memory through a
// Charger. Not counted: a restored state no operator registered yet, and
// what the Go runtime adds to each object.
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
// at once; a table grows rarely (when it doubles), and values take in
// chunks (valueChunk), so the atomic is rare per record.
func (m *Memory) take(n int64, state, what string) {
	if !m.tryTake(n) {
		panic(&MemoryError{State: state, What: what, Grow: n, Used: m.used.Load(), Limit: m.limit})
	}
}

// tryTake adds n bytes and says so, or takes nothing and says false if
// that would pass the limit.
func (m *Memory) tryTake(n int64) bool {
	if used := m.used.Add(n); used > m.limit {
		m.used.Add(-n)
		return false
	}
	return true
}

// MemoryError is the failure of a store's growth past its Memory. Package
// task turns it into the subtask's failure, marked permanent: a restart
// restores the state the job had at its last checkpoint, which grows the
// same way.
type MemoryError struct {
	State string
	// What grew: "its table", "what its values point to", "what a
	// checkpoint still holds".
	What              string
	Grow, Used, Limit int64
}

func (e *MemoryError) Error() string {
	what := e.What
	if what == "" {
		what = whatTable
	}
	return fmt.Sprintf("keyed state %q (hashmap backend): %d more bytes for %s would take the keyed state of this TaskManager past %d bytes, the bound of weir.Config.HeapStateMemory (--heap-state-memory; %d bytes are in use): raise it, or keep the state on disk with the pebble backend (--state-backend pebble)",
		e.State, e.Grow, what, e.Limit, e.Used)
}

// Charger takes memory from a Memory for one user on one goroutine (a
// timer service's queue), in chunks: Add and Sub are an add and a compare,
// and the Memory the subtasks share is written once per chunk. It holds up
// to two chunks more than its user counts. The zero Charger, or one of a
// nil Memory, counts nothing against any bound.
type Charger struct {
	mem         *Memory
	state, what string
	used, taken int64
	// Add calls more above high (taken; MaxInt64 without a Memory), Sub
	// calls less below low (taken less two chunks).
	high, low int64
}

// NewCharger returns a Charger of m (nil: no bound) whose MemoryError
// names state and what grew.
func NewCharger(m *Memory, state, what string) Charger {
	return Charger{mem: m, state: state, what: what}
}

// Add counts n more bytes, or panics with a *MemoryError, counting
// nothing, if they would take the Memory past its limit.
func (c *Charger) Add(n int64) {
	if c.used+n > c.high {
		c.more(n)
	}
	c.used += n
}

// Sub counts n bytes fewer, giving back what it holds beyond a chunk once
// it holds two.
func (c *Charger) Sub(n int64) {
	c.used -= n
	if c.used < c.low {
		c.less()
	}
}

// Used returns the bytes counted.
func (c *Charger) Used() int64 { return c.used }

func (c *Charger) more(n int64) {
	if c.mem == nil {
		c.high, c.low = math.MaxInt64, math.MinInt64
		return
	}
	need := c.used + n - c.taken
	if c.mem.tryTake(need + valueChunk) {
		need += valueChunk
	} else {
		c.mem.take(need, c.state, c.what)
	}
	c.taken += need
	c.high, c.low = c.taken, c.taken-2*valueChunk
}

func (c *Charger) less() {
	if c.mem == nil {
		return
	}
	back := c.taken - c.used - valueChunk
	c.mem.used.Add(-back)
	c.taken -= back
	c.high, c.low = c.taken, c.taken-2*valueChunk
}

// Release gives back all the Charger took; it counts nothing afterwards
// until its next Add.
func (c *Charger) Release() {
	if c.mem != nil {
		c.mem.used.Add(-c.taken)
	}
	c.used, c.taken, c.high, c.low = 0, 0, 0, 0
}

// What a MemoryError says grew.
const (
	whatTable  = "its table"
	whatValues = "what its values point to"
	whatHeld   = "what a checkpoint still holds after a write copied it"
)

// valueChunk is how much a store takes from its Memory at a time for what
// values point to, so that values that grow and shrink by a few bytes do
// not write the Memory the stores of all subtasks share on every record.
// A store so holds up to two chunks more than its values take.
const valueChunk = 64 << 10

// UseMemory makes the store's tables take their memory from m (nil: no
// bound). Call it before any table is created.
func (s *Store) UseMemory(m *Memory) { s.mem = m }

// Release gives back what the store's tables and values took from its
// Memory; the store is not used afterwards. What a snapshot still holds
// is given back when that snapshot is released.
func (s *Store) Release() {
	if s.mem != nil {
		s.mem.used.Add(-s.memTaken)
		s.memTaken, s.memUsed = 0, 0
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
	s.mem.take(n, state, whatTable)
	s.memTaken += n
	s.memUsed += n
}

// shrink gives back n bytes a table or value no longer takes.
func (s *Store) shrink(n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	s.memUsed -= n
	if spare := s.memTaken - s.memUsed; spare > 2*valueChunk {
		back := spare - valueChunk
		s.mem.used.Add(-back)
		s.memTaken -= back
	}
}

// growValues takes n more bytes for what the values of state point to:
// from what the store took ahead, else from the Memory with a chunk more
// (or exactly n, if the chunk does not fit).
func (s *Store) growValues(state string, n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	if need := s.memUsed + n - s.memTaken; need > 0 {
		if s.mem.tryTake(need + valueChunk) {
			need += valueChunk
		} else {
			s.mem.take(need, state, whatValues)
		}
		s.memTaken += need
	}
	s.memUsed += n
}

// frozen is a snapshot the store took with Freeze: what it still holds of
// what the task has copied away since.
type frozen struct {
	ver uint64 // the store's snapshot version the snapshot made current
	mem *Memory
	// held is the bytes this snapshot holds that the task no longer
	// does, or below zero once the snapshot is released. The task
	// goroutine adds; Release, on any goroutine, swaps.
	held atomic.Int64
}

// add takes n bytes from the Memory for the snapshot (panicking with a
// *MemoryError if they do not fit) and says whether it is still held;
// if not, nothing is taken.
func (f *frozen) add(n int64, state string) bool {
	if f.held.Load() < 0 {
		return false
	}
	f.mem.take(n, state, whatHeld)
	for {
		h := f.held.Load()
		if h < 0 {
			f.mem.used.Add(-n)
			return false
		}
		if f.held.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

func (f *frozen) release() {
	if h := f.held.Swap(math.MinInt64); h > 0 {
		f.mem.used.Add(-h)
	}
}

// hold counts n bytes the task copied away from (or dropped) that a
// snapshot taken after version ver still holds: the newest such snapshot
// not yet released holds them until it is. None: the bytes are garbage,
// and nothing is counted.
func (s *Store) hold(ver uint64, n int64, state string) {
	if n <= 0 {
		return
	}
	for i := len(s.frozen) - 1; i >= 0 && s.frozen[i].ver > ver; i-- {
		if s.frozen[i].add(n, state) {
			return
		}
	}
}

// Freeze is Snapshot, and counts what the snapshot holds of what the task
// copies away afterwards (a page of slots, control words, a value cloned
// before a write or deleted) until release is called, on any goroutine,
// once or more: the snapshot's sources are not read afterwards.
func (s *Store) Freeze() (sources []snapshot.Source, release func()) {
	sources = s.Snapshot()
	if s.mem == nil {
		return sources, func() {}
	}
	live := s.frozen[:0]
	for _, f := range s.frozen {
		if f.held.Load() >= 0 {
			live = append(live, f)
		}
	}
	clear(s.frozen[len(live):])
	f := &frozen{ver: s.snapVer, mem: s.mem}
	s.frozen = append(live, f)
	return sources, f.release
}
