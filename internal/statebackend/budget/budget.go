package budget

import (
	"fmt"
	"math"
	"sync/atomic"
)

// Budget is the bound on the hashmap backend's keyed state that the
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
// *Error, before the memory is taken. The timers of keyed operators
// on this backend (internal/timers) take from the same Budget through a
// Charger. Not counted: a restored state no operator registered yet, and
// what the Go runtime adds to each object.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// New returns a budget of limit bytes (> 0).
func New(limit int64) *Budget { return &Budget{limit: limit} }

// Used returns the bytes the stores hold now.
func (m *Budget) Used() int64 { return m.used.Load() }

// Take adds n bytes for state, or panics with an *Error naming state and
// what grew, taking nothing, if that would pass the limit. Stores of
// several subtasks take at once; a table grows rarely (when it doubles),
// and values take in chunks (Chunk), so the atomic is rare per record.
func (m *Budget) Take(n int64, state, what string) {
	if !m.TryTake(n) {
		panic(&Error{State: state, What: what, Grow: n, Used: m.used.Load(), Limit: m.limit})
	}
}

// TryTake adds n bytes and says so, or takes nothing and says false if
// that would pass the limit.
func (m *Budget) TryTake(n int64) bool {
	if used := m.used.Add(n); used > m.limit {
		m.used.Add(-n)
		return false
	}
	return true
}

// Give gives back n bytes taken before.
func (m *Budget) Give(n int64) { m.used.Add(-n) }

// Error is the failure of a store's growth past its Budget. Package
// task turns it into the subtask's failure, marked permanent: a restart
// restores the state the job had at its last checkpoint, which grows the
// same way.
type Error struct {
	State string
	// What grew: "its table", "what its values point to", "what a
	// checkpoint still holds".
	What              string
	Grow, Used, Limit int64
}

func (e *Error) Error() string {
	what := e.What
	if what == "" {
		what = WhatTable
	}
	return fmt.Sprintf("keyed state %q (hashmap backend): %d more bytes for %s would take the keyed state of this TaskManager past %d bytes, the bound of weir.Config.HeapStateMemory (--heap-state-memory; %d bytes are in use): raise it, or keep the state on disk with the pebble backend (--state-backend pebble)",
		e.State, e.Grow, what, e.Limit, e.Used)
}

// Charger takes memory from a Budget for one user on one goroutine (a
// timer service's queue), in chunks: Add and Sub are an add and a compare,
// and the Budget the subtasks share is written once per chunk. It holds up
// to two chunks more than its user counts. The zero Charger, or one of a
// nil Budget, counts nothing against any bound.
type Charger struct {
	mem         *Budget
	state, what string
	used, taken int64
	// Add calls more above high (taken; MaxInt64 without a Budget), Sub
	// calls less below low (taken less two chunks).
	high, low int64
}

// NewCharger returns a Charger of m (nil: no bound) whose MemoryError
// names state and what grew.
func NewCharger(m *Budget, state, what string) Charger {
	return Charger{mem: m, state: state, what: what}
}

// Add counts n more bytes, or panics with a *Error, counting
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
	if c.mem.TryTake(need + Chunk) {
		need += Chunk
	} else {
		c.mem.Take(need, c.state, c.what)
	}
	c.taken += need
	c.high, c.low = c.taken, c.taken-2*Chunk
}

func (c *Charger) less() {
	if c.mem == nil {
		return
	}
	back := c.taken - c.used - Chunk
	c.mem.Give(back)
	c.taken -= back
	c.high, c.low = c.taken, c.taken-2*Chunk
}

// Release gives back all the Charger took; it counts nothing afterwards
// until its next Add.
func (c *Charger) Release() {
	if c.mem != nil {
		c.mem.Give(c.taken)
	}
	c.used, c.taken, c.high, c.low = 0, 0, 0, 0
}

// What an Error says grew.
const (
	WhatTable  = "its table"
	WhatValues = "what its values point to"
	WhatHeld   = "what a checkpoint still holds after a write copied it"
)

// Chunk is how much a user takes from its Budget at a time for what
// values point to, so that values that grow and shrink by a few bytes do
// not write the Budget the stores of all subtasks share on every record.
// A user so holds up to two chunks more than its values take.
const Chunk = 64 << 10
