package state

import (
	"iter"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"

	"github.com/weirhq/weir/internal/prefault"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/valuecopy"
)

// intKeyed says whether UK is a 64-bit integer kind, whose map states the
// heap backend keeps in an intMap per key instead of a Go map.
func intKeyed[UK any]() bool {
	t := reflect.TypeFor[UK]()
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return t.Size() == 8
	}
	return false
}

// intFlip is XORed into a user key's bits to make its slot key, so that
// the zero slot key can mark an empty slot (a zeroed array is an empty
// table) and the user key that would map to it is one no program picks
// (not 0, -1 or math.MinInt64): that key is kept beside the table.
const intFlip = 0x5bd1e9955bd1e995

// intBits and intKey convert a user key of a 64-bit integer kind (intKeyed)
// to its bits and back.
func intBits[UK any](k UK) uint64    { return *(*uint64)(unsafe.Pointer(&k)) }
func intKey[UK any](b uint64) UK     { return *(*UK)(unsafe.Pointer(&b)) }
func intSlotKey[UK any](k UK) uint64 { return intBits(k) ^ intFlip }

// intSlot is a slot of an intMap: slot key (intFlip ^ the user key's bits;
// 0 when empty) and value.
type intSlot[UV any] struct {
	k uint64
	v UV
}

// intMap is one key's map state on the heap backend when the user key is
// a 64-bit integer: an open-addressing table (linear probing, Fibonacci
// hashing, deletion by shifting back, so no tombstones) in one array of
// key-value slots. A Go map per key reached its entries through its header,
// directory, table and group, each a cache miss when the key's map is
// cold (q16's 10,000 small channel groups), and probed control bytes
// before the slot; here the slot array hangs off the state table's entry,
// and a lookup is one miss (linear probing stays in the line or the
// next). Fibonacci hashing spreads runs of consecutive keys (dense ids)
// evenly, with no collisions among a run shorter than the table.
type intMap[UV any] struct {
	slots []intSlot[UV] // nil or a power of two long; at most 3/4 used
	n     int           // keys in slots
	x     *intMapX[UV]  // with TTL, or when the user key intFlip is in: else nil
}

// intMapX is what few intMaps need.
type intMapX[UV any] struct {
	ts []int64 // with TTL: each slot's time of its last write (or read)
	// The user key whose slot key would be 0 (empty), when has.
	has bool
	v   UV
	vts int64
}

const intMinSlots = 8

// home is where slot key s starts probing in a table of len(m.slots).
func (m *intMap[UV]) home(s uint64) int {
	return int((s * 0x9e3779b97f4a7c15) >> (bits.LeadingZeros64(uint64(len(m.slots))) + 1))
}

// len is the number of keys, the special one included.
func (m *intMap[UV]) len() int {
	if m.x != nil && m.x.has {
		return m.n + 1
	}
	return m.n
}

// find returns the slot of s (not 0), or -1.
func (m *intMap[UV]) find(s uint64) int {
	sl := m.slots
	if len(sl) == 0 {
		return -1
	}
	mask := len(sl) - 1
	for i := m.home(s); ; i = (i + 1) & mask {
		switch sl[i].k {
		case s:
			return i
		case 0:
			return -1
		}
	}
}

// put sets the value of s (not 0) and returns its slot, growing the table
// (with a timestamp array if timed) when s is new and the table full.
func (m *intMap[UV]) put(s uint64, v UV, timed bool) int {
	if len(m.slots) == 0 {
		m.resize(intMinSlots, timed)
	}
	for {
		sl := m.slots
		mask := len(sl) - 1
		i := m.home(s)
		for sl[i].k != s && sl[i].k != 0 {
			i = (i + 1) & mask
		}
		if sl[i].k == s {
			sl[i].v = v
			return i
		}
		if (m.n+1)*4 <= len(sl)*3 {
			sl[i] = intSlot[UV]{s, v}
			m.n++
			return i
		}
		m.resize(2*len(sl), timed)
	}
}

// resize moves the keys to new arrays of size slots: the old ones are not
// written again (a snapshot or a loop over the entries may read them).
func (m *intMap[UV]) resize(size int, timed bool) {
	old, n := m.slots, m.n
	var oldTS []int64
	if timed {
		if m.x == nil {
			m.x = &intMapX[UV]{}
		}
		oldTS = m.x.ts
		m.x.ts = make([]int64, size)
	}
	m.slots, m.n = make([]intSlot[UV], size), 0
	prefault.Fresh(m.slots) // the probes below read before they write
	mask := size - 1
	for j := range old {
		if old[j].k == 0 {
			continue
		}
		i := m.home(old[j].k)
		for m.slots[i].k != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = old[j]
		if timed {
			m.x.ts[i] = oldTS[j]
		}
	}
	m.n = n
}

// removeAt empties slot i and shifts back the keys after it that probed
// past it, so that every key stays reachable from its home without
// tombstones. Keys move only into slot i or after it (in probe order).
func (m *intMap[UV]) removeAt(i int) {
	sl := m.slots
	mask := len(sl) - 1
	var ts []int64
	if m.x != nil {
		ts = m.x.ts
	}
	for j := (i + 1) & mask; sl[j].k != 0; j = (j + 1) & mask {
		// The key at j may move to i if i is no further from its home
		// than j is.
		if h := m.home(sl[j].k); (j-h)&mask >= (j-i)&mask {
			sl[i] = sl[j]
			if ts != nil {
				ts[i] = ts[j]
			}
			i = j
		}
	}
	sl[i] = intSlot[UV]{} // also drops what the value pointed to
	m.n--
}

// clone copies the arrays, for copy-on-write: values are copied shallowly,
// as maps.Clone does for the Go map of other map states.
func (m intMap[UV]) clone() intMap[UV] {
	c := intMap[UV]{slots: slices.Clone(m.slots), n: m.n}
	if m.x != nil {
		x := *m.x
		x.ts = slices.Clone(x.ts)
		c.x = &x
	}
	return c
}

// heapIntMap is a MapState on the heap backend whose user key is a 64-bit
// integer kind: an intMap per key.
//
// Its loops (All, Keys) read the entries as they were when the loop
// started, as the Pebble backend's do: a write to the current key's map
// during a loop over it first copies the slot array the loop reads
// (iterating lists those arrays). So a loop sees neither its own puts nor
// its removes, and a remove cannot shift an unvisited key back past the
// loop's position.
type heapIntMap[UK comparable, UV any] struct {
	t         *typedstore.Table[intMap[UV]]
	ttl       ttlPolicy
	iterating []*intSlot[UV] // the first slots of the arrays running loops read
	mut       bool           // UV can be changed in place: reads see an unshared entry
}

func newHeapIntMap[UK comparable, UV any](s *typedstore.Store, meta snapshot.StateMeta, d MapDescriptor[UK, UV]) (*heapIntMap[UK, UV], error) {
	h := &heapIntMap[UK, UV]{ttl: newTTL(meta, s.Now)}
	timed := h.ttl.ttl > 0
	clone := intMap[UV].clone
	if cp := valuecopy.Func(d.ValueCodec); cp != nil {
		// Values that can be changed in place are copied too.
		h.mut = true
		clone = func(m intMap[UV]) intMap[UV] {
			c := m.clone()
			for i := range c.slots {
				if c.slots[i].k != 0 {
					c.slots[i].v = cp(c.slots[i].v)
				}
			}
			if c.x != nil && c.x.has {
				c.x.v = cp(c.x.v)
			}
			return c
		}
	}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[intMap[UV]]{
		Clone: clone,
		Emit: func(e *typedstore.Entry[intMap[UV]], now int64, scratch *[]byte, emit typedstore.Emit) error {
			m := &e.Val
			one := func(k UK, v UV, ts int64) error {
				if h.ttl.expired(ts, now) {
					return nil
				}
				b := d.UserKeyCodec.AppendEncode((*scratch)[:0], k)
				n := len(b)
				b = d.ValueCodec.AppendEncode(b, v)
				*scratch = b
				return emit(b[:n:n], true, b[n:], timed, ts)
			}
			for i := range m.slots {
				if m.slots[i].k == 0 {
					continue
				}
				var ts int64
				if timed {
					ts = m.x.ts[i]
				}
				if err := one(intKey[UK](m.slots[i].k^intFlip), m.slots[i].v, ts); err != nil {
					return err
				}
			}
			if m.x != nil && m.x.has {
				return one(intKey[UK](intFlip), m.x.v, m.x.vts)
			}
			return nil
		},
		Restore: func(e *typedstore.Entry[intMap[UV]], se snapshot.Entry, restoredTTL bool) error {
			k, v, err := decodeMapEntry(d, se)
			if err != nil {
				return err
			}
			var ts int64
			if timed {
				ts = restoredTS(se, restoredTTL, s.Now)
			}
			h.set(&e.Val, intSlotKey(k), v, ts)
			return nil
		},
	})
	h.t = t
	return h, err
}

// set puts s's value and time (with TTL) into m, which must be writable.
func (h *heapIntMap[UK, UV]) set(m *intMap[UV], s uint64, v UV, ts int64) {
	timed := h.ttl.ttl > 0
	if s == 0 {
		if m.x == nil {
			m.x = &intMapX[UV]{}
		}
		m.x.has, m.x.v, m.x.vts = true, v, ts
		return
	}
	i := m.put(s, v, timed)
	if timed {
		m.x.ts[i] = ts
	}
}

// writable returns e's map ready to be written: owned by no snapshot, and
// not the array of a running loop.
func (h *heapIntMap[UK, UV]) writable(e *typedstore.Entry[intMap[UV]]) *intMap[UV] {
	m := &h.t.Writable(e).Val
	if len(h.iterating) != 0 {
		h.unshare(m)
	}
	return m
}

// unshare gives m a copy of its slot array if a running loop reads it.
func (h *heapIntMap[UK, UV]) unshare(m *intMap[UV]) {
	if len(m.slots) != 0 && slices.Contains(h.iterating, &m.slots[0]) {
		m.slots = slices.Clone(m.slots)
	}
}

func (h *heapIntMap[UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	e := h.t.Lookup()
	if e == nil {
		return zero, false
	}
	if h.mut {
		e = h.t.Writable(e)
	}
	m := &e.Val
	s := intSlotKey(k)
	if s == 0 {
		if m.x == nil || !m.x.has {
			return zero, false
		}
		if h.ttl.ttl > 0 {
			now := h.ttl.now()
			if h.ttl.expired(m.x.vts, now) {
				h.Remove(k)
				return zero, false
			}
			if h.ttl.onRead {
				h.writable(e).x.vts = now
			}
		}
		return m.x.v, true
	}
	i := m.find(s)
	if i < 0 {
		return zero, false
	}
	if h.ttl.ttl > 0 {
		now := h.ttl.now()
		if h.ttl.expired(m.x.ts[i], now) {
			h.Remove(k)
			return zero, false
		}
		if h.ttl.onRead {
			// A copy keeps the slots where they were.
			h.writable(e).x.ts[i] = now
		}
	}
	return m.slots[i].v, true
}

func (h *heapIntMap[UK, UV]) Put(k UK, v UV) {
	e, _ := h.t.Upsert()
	m := &e.Val
	if len(h.iterating) != 0 {
		h.unshare(m)
	}
	h.set(m, intSlotKey(k), v, h.ttl.clock())
}

func (h *heapIntMap[UK, UV]) Remove(k UK) {
	e := h.t.Lookup()
	if e == nil {
		return
	}
	m := &e.Val
	s := intSlotKey(k)
	i := -1
	if s == 0 {
		if m.x == nil || !m.x.has {
			return
		}
	} else if i = m.find(s); i < 0 {
		return
	}
	if m.len() == 1 {
		h.t.Delete()
		return
	}
	m = h.writable(e)
	if s == 0 {
		var zero UV
		m.x.has, m.x.v = false, zero
		return
	}
	m.removeAt(i)
}

func (h *heapIntMap[UK, UV]) Contains(k UK) bool {
	_, ok := h.Get(k)
	return ok
}

// live returns the current key's map after dropping expired entries (and
// refreshing the others' time if touch and reads refresh it), or nil if
// none is left.
func (h *heapIntMap[UK, UV]) live(touch bool) *intMap[UV] {
	e := h.t.Lookup()
	if e == nil {
		return nil
	}
	if h.mut && touch {
		e = h.t.Writable(e) // All hands out values that may be changed
	}
	if h.ttl.ttl == 0 {
		return &e.Val
	}
	now := h.ttl.now()
	m := &e.Val
	dead := m.x.has && h.ttl.expired(m.x.vts, now)
	for i := 0; !dead && i < len(m.slots); i++ {
		dead = m.slots[i].k != 0 && h.ttl.expired(m.x.ts[i], now)
	}
	refresh := touch && h.ttl.onRead
	if !dead && !refresh {
		return m
	}
	m = h.writable(e)
	if m.x.has && h.ttl.expired(m.x.vts, now) {
		var zero UV
		m.x.has, m.x.v = false, zero
	}
	for i := range m.slots {
		// removeAt refills slot i from later slots: check it again.
		for m.slots[i].k != 0 && h.ttl.expired(m.x.ts[i], now) {
			m.removeAt(i)
		}
	}
	if m.len() == 0 {
		h.t.Delete()
		return nil
	}
	if refresh {
		for i := range m.slots {
			m.x.ts[i] = now
		}
		m.x.vts = now
	}
	return m
}

// each calls yield with the entries of the current key's map as they are
// now (see heapIntMap), until it returns false.
func (h *heapIntMap[UK, UV]) each(touch bool, yield func(UK, UV) bool) {
	m := h.live(touch)
	if m == nil {
		return
	}
	// m may move once yield writes: read it all first.
	sl := m.slots
	var special UV
	hasSpecial := m.x != nil && m.x.has
	if hasSpecial {
		special = m.x.v
	}
	if len(sl) != 0 {
		h.iterating = append(h.iterating, &sl[0])
		defer func() {
			i := slices.Index(h.iterating, &sl[0])
			h.iterating = slices.Delete(h.iterating, i, i+1)
		}()
	}
	if hasSpecial && !yield(intKey[UK](intFlip), special) {
		return
	}
	for i := range sl {
		if sl[i].k != 0 && !yield(intKey[UK](sl[i].k^intFlip), sl[i].v) {
			return
		}
	}
}

func (h *heapIntMap[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) { h.each(true, yield) }
}

func (h *heapIntMap[UK, UV]) Keys() iter.Seq[UK] {
	return func(yield func(UK) bool) {
		h.each(true, func(k UK, _ UV) bool { return yield(k) })
	}
}

func (h *heapIntMap[UK, UV]) IsEmpty() bool { return h.live(false) == nil }

func (h *heapIntMap[UK, UV]) Clear() { h.t.Delete() }
