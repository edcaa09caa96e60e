package typedstore

import (
	"math/bits"
	"unsafe"

	"github.com/weirhq/weir/internal/prefault"
	"github.com/weirhq/weir/internal/snapshot"
)

// Entry is the state of one key (and namespace) in one table.
// TTL timestamps are part of E where a state has TTL.
//
// An Entry lives in a table's slot, whose header holds its version (see
// Table.owned): a pointer to an Entry is only ever one into a slot.
type Entry[E any] struct {
	Val E
}

// slotOf returns the slot holding e.
func slotOf[E any](e *Entry[E]) *slot[E] {
	var sl slot[E]
	return (*slot[E])(unsafe.Add(unsafe.Pointer(e), -int(unsafe.Offsetof(sl.e))))
}

// ageVersions gives every entry version v, which must be the store's
// current one, just before a snapshot makes it older: then no entry's
// version (the low 32 bits of one) is equal to one of the next 2^31
// snapshots'. It writes only pages it owns, copying those a snapshot
// shares, as a first write after a snapshot does; the lookup cache and
// the memo, which may name entries of the copied pages, are emptied.
func (t *Table[E]) ageVersions(v uint64) {
	if t.sz != nil {
		t.settle()
	}
	for idx := range t.groups {
		if t.groups[idx].t.size() == 0 {
			continue
		}
		g := t.own(idx, false)
		for p := range g.t.pages {
			g.t.writable(p<<pageBits, v, t) // own the page
			pg := g.t.pages[p]
			for i := range pg {
				if pg[i].hn != 0 {
					pg[i].ver = uint32(v)
				}
			}
		}
	}
	t.forget()
	t.last, t.lastEpoch = nil, 0
}

// group is one key group's table.
type group[E any] struct {
	t   slots[E]
	n   int    // keys in t
	ver uint64 // t is shared with a snapshot when ver < Store.snapVer
	// sizes has a word per slot of t in a table whose sizer has cells:
	// what the slot's value points to, as last counted (see sizer).
	// Only the task goroutine reads it; snapshots do not share it.
	sizes []int64
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
	_      [64]byte // see Store: last and lastEpoch change per record
	s      *Store
	md     snapshot.StateMeta
	groups []group[E]
	ops    Ops[E]
	keys   int // in all groups
	// prefFirst is the number of keys above which a lookup reads the key's
	// preferred slot before the control word (see lookup).
	prefFirst int

	// last is the current key's entry (nil: absent) if lastEpoch == s.epoch.
	// It points into a group's slots, so every operation that may move or
	// copy them refreshes it (Insert, Writable, Delete) or changes the
	// epoch (Store.Restore).
	last      *Entry[E]
	lastEpoch uint64

	// memo caches OwnedWord's answers by key word (see MemoWord), sized
	// by memoFor; empty when off.
	memo      []memoPlace[E]
	memoShift uint8
	memoOn    bool

	// sz counts what entries point to, in a table of a store with a
	// Memory whose E holds pointers; else nil, and nothing is done per
	// record.
	sz *sizer[E]
	_  [64]byte
}

// NewTable creates the table of a state and attaches it to the store,
// decoding any restored entries of the same name.
func NewTable[E any](s *Store, meta snapshot.StateMeta, ops Ops[E]) (*Table[E], error) {
	t := &Table[E]{s: s, md: meta, groups: make([]group[E], s.rng.Len()), ops: ops,
		prefFirst: prefFirstBytes / int(unsafe.Sizeof(slot[E]{})*8/5)}
	if s.mem != nil {
		t.sz = newSizer[E]()
	}
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
// entry may be shared with a snapshot: call Writable before modifying it,
// and use only what Writable returns afterwards. The pointer is valid until
// the next Writable, Insert or Delete on this table or Restore of the store.
func (t *Table[E]) Lookup() *Entry[E] {
	if t.lastEpoch == t.s.epoch { // small enough to inline
		return t.last
	}
	return t.lookup()
}

func (t *Table[E]) lookup() *Entry[E] {
	s := t.s
	if s.kgIdx < 0 {
		t.checkKey()
	}
	im := &s.im
	if s.imEpoch != s.epoch {
		im = s.image()
	}
	g := &t.groups[s.kgIdx]
	var e *Entry[E]
	if ctrl := g.t.ctrl; im.hn&0xff != longKey && len(ctrl) > 0 {
		// slots.find for a short key, written out: this runs for every
		// state read, and the call was a tenth of it.
		gmask := uint64(len(ctrl) - 1)
		home := homeGroup(im.hn, gmask)
		p0 := g.t.p0
		if t.keys > t.prefFirst {
			// A table larger than the caches: the preferred slot's
			// address needs no load, and most keys are there.
			if sl := g.t.at(int(home*8 + prefAt(im.hn))); sl.hn == uint32(im.hn) && sl.w0 == im.w0 && sl.w1 == im.w1 {
				e = &sl.e
				goto found
			}
		}
	probe:
		for gi := home; ; gi = (gi + 1) & gmask {
			w := ctrl[gi]
			for m := matchByte(w, h2(im.hn)); m != 0; m &= m - 1 {
				sl := g.t.atFrom(p0, int(gi*8+byteAt(m)))
				if sl.hn == uint32(im.hn) && sl.w0 == im.w0 && sl.w1 == im.w1 {
					e = &sl.e
					break probe
				}
			}
			if matchEmpty(w) != 0 {
				break
			}
		}
	} else if i := g.t.find(im, s.cur); i >= 0 {
		e = &g.t.at(i).e
	}
found:
	t.last, t.lastEpoch = e, s.epoch
	return e
}

// OwnedWord returns the entry of the 8-byte key of little-endian word k0
// (a 64-bit integer key) in key group kg, under no namespace, ready to be
// modified in place (as Writable's), when the key is in its home group and
// no snapshot shares the entry; else nil, and the caller sets the key and
// looks it up. It neither reads nor changes the store's current key, nor
// what Lookup caches: an operator whose function reads no state (the
// streaming Reduce) updates most elements' entries without setting the key
// of each. The store must have no current namespace.
func (t *Table[E]) OwnedWord(kg int, k0 uint64) *Entry[E] {
	sl, i := t.ownedWord(kg, k0)
	if sl == nil {
		return nil
	}
	if t.sz != nil {
		t.track(kg-t.s.rng.Start, i)
		return &sl.e // no memo: every write is tracked
	}
	if !t.memoOn {
		t.memoStart()
	}
	if len(t.memo) > 0 {
		t.memo[(k0*memoMul)>>t.memoShift] = memoPlace[E]{k0, &sl.e}
	}
	return &sl.e
}

// memoMul spreads key words over the memo (Fibonacci hashing): runs of
// integer keys land in distinct places.
const memoMul = 0x9E3779B97F4A7C15

// MemoWord returns what OwnedWord(kg, k0) would, for the key group kg of
// k0, when OwnedWord returned that entry before and nothing moved it
// since; else nil (then call OwnedWord, which remembers its answer). It
// needs neither the key group nor the key's image: one multiplication
// and one load, for the keys a subtask updates over and over.
func (t *Table[E]) MemoWord(k0 uint64) *Entry[E] {
	if len(t.memo) == 0 {
		return nil
	}
	m := &t.memo[(k0*memoMul)>>t.memoShift]
	// The version check repeats what the snapshot's emptying of the memo
	// ensures (either alone keeps shared entries out); it costs nothing
	// beside the load of the entry the caller makes anyway.
	if e := m.e; m.k0 == k0 && e != nil && slotOf(e).ver == uint32(t.s.snapVer) && len(t.s.ns) == 0 {
		return e
	}
	return nil
}

// memoStart turns the memo on: only tables whose users ask OwnedWord (and
// so MemoWord) keep one.
func (t *Table[E]) memoStart() {
	if t.sz != nil {
		return // a sized table tracks each write, which MemoWord would skip
	}
	t.memoOn = true
	t.memoFor()
}

// memoFor sizes the memo for the table's keys, when they reach a power
// of two: four places per key then, two at the next power, so few keys
// share a place; none from memoMaxKeys on, where the memo would mostly
// miss and only add its load to every lookup. So a memo is 1 KB (64
// places) to 64 bytes a key of its table, at most 512 KB: many subtasks
// of few keys each keep little.
func (t *Table[E]) memoFor() {
	want := 0
	if t.memoOn && t.keys < memoMaxKeys {
		want = max(memoMinPlaces, 1<<bits.Len(uint(2*t.keys)))
	}
	if want == len(t.memo) {
		return
	}
	if want == 0 {
		t.memo = nil
		return
	}
	t.memo, t.memoShift = make([]memoPlace[E], want), uint8(64-bits.TrailingZeros(uint(want)))
	prefault.Fresh(t.memo) // MemoWord reads places before remember writes them
}

// memoPlace is one place of the memo: the owned entry of key word k0
// under no namespace, or e nil. (Holding the key here, not only in the
// slot, costs 8 bytes a place and saves loading the slot's key words.)
type memoPlace[E any] struct {
	k0 uint64
	e  *Entry[E]
}

const (
	memoMinPlaces = 1 << 6
	memoMaxKeys   = 1 << 14
)

// forget empties the memo: slots moved (a key group grew or was
// rebuilt).
func (t *Table[E]) forget() {
	clear(t.memo)
}

// forgetSlot drops the memo's place of the key in sl, which is about to
// be freed (and may then hold another key). Only 8-byte keys under no
// namespace have places: map keys of 9 bytes whose first is 8.
func (t *Table[E]) forgetSlot(sl *slot[E]) {
	if len(t.memo) == 0 || sl.hn&0xff != 9 || sl.w0&0xff != 8 {
		return
	}
	k0 := sl.w0>>8 | sl.w1<<56
	if m := &t.memo[(k0*memoMul)>>t.memoShift]; m.k0 == k0 {
		*m = memoPlace[E]{}
	}
}

// ownedWord is OwnedWord's lookup: the slot and its index, or nil.
func (t *Table[E]) ownedWord(kg int, k0 uint64) (*slot[E], int) {
	s := t.s
	idx := kg - s.rng.Start
	if uint(idx) >= uint(len(t.groups)) || len(s.ns) > 0 {
		return nil, 0
	}
	g := &t.groups[idx]
	ctrl := g.t.ctrl
	if len(ctrl) == 0 {
		return nil, 0
	}
	im := wordImage(k0)
	home := homeGroup(im.hn, uint64(len(ctrl)-1))
	p0 := g.t.p0
	if t.keys > t.prefFirst { // as in lookup
		i := int(home*8 + prefAt(im.hn))
		if sl := g.t.at(i); sl.hn == uint32(im.hn) && sl.w0 == im.w0 && sl.w1 == im.w1 {
			return t.ownedSlot(sl), i
		}
	}
	for m := matchByte(ctrl[home], h2(im.hn)); m != 0; m &= m - 1 {
		i := int(home*8 + byteAt(m))
		if sl := g.t.atFrom(p0, i); sl.hn == uint32(im.hn) && sl.w0 == im.w0 && sl.w1 == im.w1 {
			return t.ownedSlot(sl), i
		}
	}
	return nil, 0
}

// Probe is a lookup of one key and namespace taken in two halves, so that
// an operator can start the cache misses of a run of elements together
// and then finish each lookup without setting the key again: Table.Probe
// computes, for the current key, where the entry probably is (the key's
// preferred place, which lookup reads first, and the first slot of its
// home group whose control byte matches, if another) from the key's
// control word, not the slots; Table.ProbeLines also names those slots'
// cache lines, for the caller to prefetch; Table.Probed
// returns the entry if it is in one of them. (The table of 100,000 keys
// is larger than the L2 cache: a lookup is a miss, and misses of a run
// overlap only if they are started before the lookups.)
//
// A Probe names slots by key group and index, not by address (it holds no
// pointer, so writing one costs no write barrier), and it needs no
// invalidation: if the table grew or a snapshot made it copy a page since,
// Probed reads the slot of the table as it is now, and an image that
// matches there is the key's entry.
type Probe struct {
	im   keyImage
	kg   int32 // key group index in the store's range
	a, b int32 // slot indexes; b is a when there is no second slot
}

// ProbeLines is Probe and then Lines: it fills p and appends the cache
// lines of the slots p names to dst; false (dst as it was): Probe could
// not. One call, so that the group and its slots are found once.
func (t *Table[E]) ProbeLines(p *Probe, dst []uintptr) ([]uintptr, bool) {
	if !t.Probe(p) {
		return dst, false
	}
	g := &t.groups[p.kg]
	a := g.t.at(int(p.a))
	dst = slotLines(dst, a)
	if p.b != p.a {
		dst = slotLines(dst, g.t.at(int(p.b)))
	}
	return dst, true
}

// Probe fills p for the current key and namespace and says whether it
// could: not for a long key or an empty key group.
func (t *Table[E]) Probe(p *Probe) bool {
	s := t.s
	if s.imEpoch != s.epoch || s.kgIdx < 0 {
		return false
	}
	ctrl := t.groups[s.kgIdx].t.ctrl
	if len(ctrl) == 0 || s.im.hn&0xff == longKey {
		return false
	}
	home := homeGroup(s.im.hn, uint64(len(ctrl)-1))
	pref := prefAt(s.im.hn)
	a := int32(home*8 + pref)
	p.im, p.kg, p.a, p.b = s.im, int32(s.kgIdx), a, a
	w := ctrl[home]
	if m := matchByte(w, h2(s.im.hn)); m != 0 {
		p.b = int32(home*8 + byteAt(m))
	} else if matchEmpty(w) == 0 {
		// A full home group: the key, if present, was placed further on,
		// most likely in the next group; its slot is named too, so that
		// such keys' lookups are prefetched as well.
		next := (home + 1) & uint64(len(ctrl)-1)
		if m := matchByte(ctrl[next], h2(s.im.hn)); m != 0 {
			p.b = int32(next*8 + byteAt(m))
		}
	}
	return true
}

// slotLines appends the address of each cache line sl spans.
func slotLines[E any](dst []uintptr, sl *slot[E]) []uintptr {
	const line = 64
	at := uintptr(unsafe.Pointer(sl))
	for l, end := at&^(line-1), at+unsafe.Sizeof(*sl); l < end; l += line {
		dst = append(dst, l)
	}
	return dst
}

// Probed returns the entry of the key p was taken for, ready to be
// modified in place (as Writable's), if it is in a slot p names and no
// snapshot shares it; else nil, and the caller sets the key and looks it
// up. It neither reads nor changes the current key, nor what Lookup
// caches.
func (t *Table[E]) Probed(p *Probe) *Entry[E] {
	g := &t.groups[p.kg]
	n := int32(g.t.size())
	if p.a < n {
		if sl := g.t.at(int(p.a)); sl.hn == uint32(p.im.hn) && sl.w0 == p.im.w0 && sl.w1 == p.im.w1 {
			return t.probed(sl, p.kg, p.a)
		}
	}
	if p.b != p.a && p.b < n {
		if sl := g.t.at(int(p.b)); sl.hn == uint32(p.im.hn) && sl.w0 == p.im.w0 && sl.w1 == p.im.w1 {
			return t.probed(sl, p.kg, p.b)
		}
	}
	return nil
}

// probed is owned for Probed's slot i of key group index idx, tracked in a
// sized table.
func (t *Table[E]) probed(sl *slot[E], idx, i int32) *Entry[E] {
	e := t.owned(&sl.e)
	if e != nil && t.sz != nil {
		t.track(int(idx), int(i))
	}
	return e
}

// ownedSlot is owned for a slot.
func (t *Table[E]) ownedSlot(sl *slot[E]) *slot[E] {
	if sl.ver == uint32(t.s.snapVer) {
		return sl
	}
	return nil
}

// owned returns e if it was created or copied since the last snapshot
// (so that its page is owned too), else nil.
//
// A slot keeps the low 32 bits of the version its entry was written at,
// so an entry untouched for a multiple of 2^32 snapshots would look
// written now: Store.Snapshot rewrites every slot's version before its
// low half wraps around (ageVersions).
func (t *Table[E]) owned(e *Entry[E]) *Entry[E] {
	if slotOf(e).ver == uint32(t.s.snapVer) {
		return e
	}
	return nil
}

// Writable returns e, the current key's entry from Lookup, ready to be
// modified in place: e itself unless a snapshot shares it.
func (t *Table[E]) Writable(e *Entry[E]) *Entry[E] {
	if slotOf(e).ver == uint32(t.s.snapVer) {
		// Created or copied since the last snapshot, so its page is
		// owned too: nothing shares it.
		if t.sz != nil {
			t.trackCurrent(e)
		}
		return e
	}
	return t.writable()
}

// writable is the first write to the current key's entry since a snapshot:
// own the group and the entry's page (which may copy it, so find the key
// again) and the entry's value.
func (t *Table[E]) writable() *Entry[E] {
	s := t.s
	g := t.own(s.kgIdx, false)
	im := s.image() // before reading cur, which image may build
	i := g.t.find(im, s.cur)
	sl := g.t.writable(i, s.snapVer, t)
	t.cloneValue(g, i, sl)
	ne := &sl.e
	t.last, t.lastEpoch = ne, s.epoch
	if t.sz != nil {
		t.track(s.kgIdx, i)
	}
	return ne
}

// cloneValue gives the value of slot i of g, which a snapshot shares,
// its own copy (Ops.Clone): the snapshot holds what the old one points to.
func (t *Table[E]) cloneValue(g *group[E], i int, sl *slot[E]) {
	if t.sz != nil {
		t.s.hold(t.verOf(sl), t.counted(g, i, sl), t.md.Name)
	}
	sl.e.Val, sl.ver = t.ops.Clone(sl.e.Val), uint32(t.s.snapVer)
}

// verOf is the full snapshot version of the low 32 bits a slot keeps: no
// entry's is more than 2^32 behind (Store.Snapshot ages them).
func (t *Table[E]) verOf(sl *slot[E]) uint64 {
	return t.s.snapVer - uint64(uint32(t.s.snapVer)-sl.ver)
}

// Upsert returns the current key's entry ready to be modified in place,
// inserting a zero one (and saying so) if the key is absent.
func (t *Table[E]) Upsert() (e *Entry[E], inserted bool) {
	if e = t.Lookup(); e != nil {
		return t.Writable(e), false
	}
	return t.Insert(), true
}

// Insert adds a zero entry for the current key, which must be absent.
func (t *Table[E]) Insert() *Entry[E] {
	t.checkKey()
	s := t.s
	im := s.image() // before reading cur, which image may build
	e := t.insert(s.kgIdx, im, s.cur)
	t.last, t.lastEpoch = e, s.epoch
	return e
}

func (t *Table[E]) insert(idx int, im *keyImage, k []byte) *Entry[E] {
	g := t.own(idx, true)
	if im.hn&0xff == longKey {
		t.s.growValues(t.md.Name, int64(len(k)))
	}
	i := g.t.insert(im, k, t.s.snapVer, t)
	sl := g.t.at(i)
	sl.ver = uint32(t.s.snapVer)
	e := &sl.e
	g.n++
	t.keys++
	if t.keys&(t.keys-1) == 0 { // at powers of two
		t.memoFor()
	}
	if t.sz != nil {
		t.track(idx, i)
	}
	return e
}

// Delete removes the current key's entry.
func (t *Table[E]) Delete() {
	t.checkKey()
	s := t.s
	im := s.image()
	if t.groups[s.kgIdx].t.find(im, s.cur) < 0 {
		return
	}
	g := t.own(s.kgIdx, false)
	i := g.t.find(im, s.cur)
	sl := g.t.at(i)
	t.forgetSlot(sl)
	if t.sz != nil {
		// The value is gone from the table; a snapshot that shares it
		// holds what it points to.
		n := t.uncount(g, i, sl)
		t.s.shrink(n)
		if sl.ver != uint32(s.snapVer) {
			t.s.hold(t.verOf(sl), n, t.md.Name)
		}
	}
	if sl.hn&0xff == longKey {
		t.s.shrink(int64(len(g.t.long[sl.w0])))
	}
	g.t.remove(i, s.snapVer, t)
	g.n--
	t.keys--
	t.last, t.lastEpoch = nil, s.epoch
}

// own returns key group idx - rng.Start with control words, page list and
// long keys the snapshots do not share (pages are owned one by one, by
// slots.writable), with room for one more key if adding.
//
// In a sized table it first settles the write in progress (its entry may
// move), and a snapshot that shares what is copied away holds it.
func (t *Table[E]) own(idx int, adding bool) *group[E] {
	if t.sz != nil {
		t.settle()
	}
	g := &t.groups[idx]
	switch {
	case adding && g.t.needsGrow(g.n):
		size := g.t.grownSize(g.n)
		t.rebuild(g, size)
	case g.ver != t.s.snapVer:
		t.s.hold(g.ver, g.t.sharedBytes(), t.md.Name)
		g.t = g.t.clone()
	}
	g.ver = t.s.snapVer
	return g
}

// rebuild replaces g's table with one of size slots, taking the bytes it
// adds first; a snapshot that shares the old one holds its shared parts.
func (t *Table[E]) rebuild(g *group[E], size int) {
	s := t.s
	s.grow(t.md.Name, t.bytes(size)-t.bytes(g.t.size()))
	if g.ver != s.snapVer && g.t.size() > 0 {
		s.hold(g.ver, g.t.sharedBytes(), t.md.Name)
	}
	for p, pg := range g.t.pages {
		if g.t.pver[p] != s.snapVer {
			s.hold(g.t.pver[p], pageBytes(pg), t.md.Name)
		}
	}
	var sizes []int64
	if t.sz != nil && t.sz.cells {
		sizes = g.sizes
		if sizes == nil {
			sizes = make([]int64, g.t.size())
		}
	}
	g.t, g.sizes = g.t.rebuilt(size, s.snapVer, sizes)
	t.forget()
}

// bytes is what a key group's table of size slots takes: tableBytes, and
// a size word per slot in a table whose sizer has cells.
func (t *Table[E]) bytes(size int) int64 {
	n := tableBytes[E](size)
	if t.sz != nil && t.sz.cells {
		n += 8 * int64(size)
	}
	return n
}

// Len returns the number of keys (with namespace) in the table.
func (t *Table[E]) Len() int { return t.keys }

// SlotBytes is the size of the table's slots: what Lines names for one
// slot, give or take a cache line.
func (t *Table[E]) SlotBytes() uintptr { return unsafe.Sizeof(slot[E]{}) }

// reserve makes room in key group kg for n more keys at once, so that a
// restore does not grow the table step by step (each step rehashes it).
func (t *Table[E]) reserve(kg, n int) {
	idx := kg - t.s.rng.Start
	g := &t.groups[idx]
	if size := sizeFor(g.n + n); size > g.t.size() {
		if t.sz != nil {
			t.settle()
		}
		t.rebuild(g, size)
		g.ver = t.s.snapVer
	}
}

func (t *Table[E]) restore(kg int, mk []byte, se snapshot.Entry, restoredTTL bool) error {
	idx := kg - t.s.rng.Start
	im := imageOf(mk)
	var e *Entry[E]
	if i := t.groups[idx].t.find(&im, mk); i >= 0 {
		g := t.own(idx, false)
		sl := g.t.writable(i, t.s.snapVer, t)
		if e = &sl.e; sl.ver != uint32(t.s.snapVer) {
			// Restore may modify the value in place.
			t.cloneValue(g, i, sl)
		}
		if t.sz != nil {
			t.track(idx, i)
		}
	} else {
		e = t.insert(idx, &im, mk)
	}
	return t.ops.Restore(e, se, restoredTTL)
}

// appendKeys appends copies of the keys of key group idx - rng.Start
// that have an entry in no namespace.
func (t *Table[E]) appendKeys(idx int, dst [][]byte) [][]byte {
	var scratch []byte
	sl := &t.groups[idx].t
	for j := range sl.size() {
		if sl.at(j).hn == 0 {
			continue
		}
		if key, ns := splitMapKey(sl.key(j, &scratch)); len(ns) == 0 {
			dst = append(dst, append([]byte(nil), key...))
		}
	}
	return dst
}

type tableSource[E any] struct {
	md     snapshot.StateMeta
	start  int
	groups []slots[E]
	ops    Ops[E]
	now    int64
}

func (t *Table[E]) source(now int64) snapshot.Source {
	// The snapshot shares every entry now, so the memo names none that
	// MemoWord would return; emptied, it holds no pages the next writes
	// copy away.
	t.forget()
	if t.sz != nil {
		t.settle() // counted before the snapshot shares it
	}
	gs := make([]slots[E], len(t.groups))
	for i := range t.groups {
		gs[i] = t.groups[i].t
	}
	return &tableSource[E]{md: t.md, start: t.s.rng.Start, groups: gs, ops: t.ops, now: now}
}

func (s *tableSource[E]) Meta() snapshot.StateMeta { return s.md }

func (s *tableSource[E]) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	i := kg - s.start
	if i < 0 || i >= len(s.groups) {
		return nil
	}
	var scratch, keyBuf []byte
	t := &s.groups[i]
	for j := range t.size() {
		if t.at(j).hn == 0 {
			continue
		}
		key, ns := splitMapKey(t.key(j, &keyBuf))
		err := s.ops.Emit(&t.at(j).e, s.now, &scratch, func(uk []byte, hasUK bool, v []byte, hasTS bool, ts int64) error {
			return add(snapshot.Entry{Key: key, Namespace: ns, HasUserKey: hasUK, UserKey: uk, Value: v, HasTS: hasTS, TS: ts})
		})
		if err != nil {
			return err
		}
	}
	return nil
}
