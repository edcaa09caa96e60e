package heap

import (
	"maps"

	"github.com/weirhq/weir/internal/snapshot"
)

// Entry is the state of one key (and namespace) in one table.
type Entry[E any] struct {
	Val E
	TS  int64  // TTL timestamp (ms) of the entry, for states with TTL
	ver uint64 // store snapshot version this entry was created at; older entries are shared with a snapshot
}

// group is one key group's map.
type group[E any] struct {
	m   map[string]*Entry[E]
	ver uint64 // the map is shared with a snapshot when ver < Store.snapVer
}

// Emit is called by Ops.Emit once per canonical entry.
type Emit func(userKey []byte, hasUserKey bool, value []byte, hasTS bool, ts int64) error

// Ops are the type-specific parts of a table, supplied by package state.
type Ops[E any] struct {
	// Clone copies what a write could change in place, for copy-on-write.
	Clone func(E) E
	// Emit encodes the live parts of an entry into canonical entries; it runs
	// on the snapshot goroutine and must only read the entry. scratch is a
	// buffer owned by that goroutine.
	Emit func(e *Entry[E], now int64, scratch *[]byte, emit Emit) error
	// Restore merges one canonical entry into e (zero for a new key).
	// restoredTTL says whether the snapshot's state had TTL.
	Restore func(e *Entry[E], s snapshot.Entry, restoredTTL bool) error
}

// Table is one keyed state: per key group, a map from map key to entry.
type Table[E any] struct {
	s      *Store
	md     snapshot.StateMeta
	groups []group[E]
	ops    Ops[E]

	last      *Entry[E] // the current key's entry (nil: absent) if lastEpoch == s.epoch
	lastEpoch uint64
}

// NewTable creates the table of a state and attaches it to the store,
// decoding any restored entries of the same name.
func NewTable[E any](s *Store, meta snapshot.StateMeta, ops Ops[E]) (*Table[E], error) {
	t := &Table[E]{s: s, md: meta, groups: make([]group[E], s.rng.Len()), ops: ops}
	if err := s.attach(meta.Name, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Store returns the table's store.
func (t *Table[E]) Store() *Store { return t.s }

func (t *Table[E]) meta() snapshot.StateMeta { return t.md }

func (t *Table[E]) checkKey() {
	if t.s.kgIdx < 0 {
		panic("state: accessed keyed state " + t.md.Name + " with no current key")
	}
}

// Lookup returns the entry of the current key and namespace, or nil. The
// entry may be shared with a snapshot: call Writable before modifying it.
func (t *Table[E]) Lookup() *Entry[E] {
	s := t.s
	if t.lastEpoch == s.epoch {
		return t.last
	}
	if s.kgIdx < 0 {
		t.checkKey()
	}
	e := t.groups[s.kgIdx].m[string(s.cur)]
	t.last, t.lastEpoch = e, s.epoch
	return e
}

// Writable returns e, the current key's entry from Lookup, ready to be
// modified in place: e itself unless a snapshot shares it.
func (t *Table[E]) Writable(e *Entry[E]) *Entry[E] {
	if e.ver == t.s.snapVer {
		return e
	}
	g := t.own()
	ne := &Entry[E]{Val: t.ops.Clone(e.Val), TS: e.TS, ver: t.s.snapVer}
	g.m[string(t.s.cur)] = ne
	t.last, t.lastEpoch = ne, t.s.epoch
	return ne
}

// Insert adds a zero entry for the current key, which must be absent.
func (t *Table[E]) Insert() *Entry[E] {
	t.checkKey()
	g := t.own()
	e := &Entry[E]{ver: t.s.snapVer}
	g.m[string(t.s.cur)] = e
	t.last, t.lastEpoch = e, t.s.epoch
	return e
}

// Delete removes the current key's entry.
func (t *Table[E]) Delete() {
	t.checkKey()
	g := &t.groups[t.s.kgIdx]
	if _, ok := g.m[string(t.s.cur)]; !ok {
		return
	}
	g = t.own()
	delete(g.m, string(t.s.cur))
	t.last, t.lastEpoch = nil, t.s.epoch
}

// own returns the current key group, cloning its map if a snapshot shares it.
func (t *Table[E]) own() *group[E] {
	g := &t.groups[t.s.kgIdx]
	if g.ver != t.s.snapVer {
		if g.m != nil {
			g.m = maps.Clone(g.m)
		}
		g.ver = t.s.snapVer
	}
	if g.m == nil {
		g.m = map[string]*Entry[E]{}
	}
	return g
}

// Len returns the number of keys (with namespace) in the table.
func (t *Table[E]) Len() int {
	n := 0
	for _, g := range t.groups {
		n += len(g.m)
	}
	return n
}

func (t *Table[E]) restore(kg int, mk []byte, se snapshot.Entry, restoredTTL bool) error {
	saved := t.s.kgIdx
	t.s.kgIdx = kg - t.s.rng.Start
	g := t.own()
	t.s.kgIdx = saved
	e := g.m[string(mk)]
	if e == nil {
		e = &Entry[E]{ver: t.s.snapVer}
		g.m[string(mk)] = e
	}
	return t.ops.Restore(e, se, restoredTTL)
}

type tableSource[E any] struct {
	md    snapshot.StateMeta
	start int
	maps  []map[string]*Entry[E]
	ops   Ops[E]
	now   int64
}

func (t *Table[E]) source(now int64) snapshot.Source {
	ms := make([]map[string]*Entry[E], len(t.groups))
	for i := range t.groups {
		ms[i] = t.groups[i].m
	}
	return &tableSource[E]{md: t.md, start: t.s.rng.Start, maps: ms, ops: t.ops, now: now}
}

func (s *tableSource[E]) Meta() snapshot.StateMeta { return s.md }

func (s *tableSource[E]) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	i := kg - s.start
	if i < 0 || i >= len(s.maps) {
		return nil
	}
	var scratch []byte
	for k, e := range s.maps[i] {
		key, ns := splitMapKey(k)
		err := s.ops.Emit(e, s.now, &scratch, func(uk []byte, hasUK bool, v []byte, hasTS bool, ts int64) error {
			return add(snapshot.Entry{Key: key, Namespace: ns, HasUserKey: hasUK, UserKey: uk, Value: v, HasTS: hasTS, TS: ts})
		})
		if err != nil {
			return err
		}
	}
	return nil
}
