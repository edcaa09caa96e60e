package timers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/prefault"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// Timer is a due timer. Key and Namespace are immutable and may be kept.
type Timer struct {
	Timestamp int64
	KeyGroup  int
	Key       []byte
	Namespace []byte
}

// State names of the timers in snapshots.
const (
	EventTimeState      = "_timers/event"
	ProcessingTimeState = "_timers/processing"
)

// item is a timer in its key group's pool, addressed by index. Its id,
// uvarint(len(key)) key ns (what identifies it besides the timestamp), lies
// in the group's arena, which is only appended to: its bytes are never
// written again, so a fired Timer's Key and Namespace may be kept, and a
// snapshot reads the arena without a copy.
type item struct {
	ts  int64
	off uint32 // of the id in the arena
	n   uint32 // the id's length; 0: a free item
	// klen is the key's length (klenMask); deadBit marks a deleted timer,
	// which its heap entry outlives until it reaches the top; unqBit a
	// live timer with no heap entry yet (see forwarding). A deleted
	// timer's key length is not read again (its id stays, for the heap's
	// order, read by off and n): its klenMask bits are instead index+1 of
	// the unqueued timer it forwards to, 0 for none.
	klen uint32
	// tag is the low 32 bits of the hash; its slot is tag<<32 | index+1.
	// An unqueued timer's is instead index+1 of the deleted timer that
	// forwards to it (its tag is taken again when it is queued).
	tag uint32
}

// Forwarding: a timer registered right after a deleted one with an earlier
// timestamp (a window that moves its timer later, as a session that an
// element extends: Flink deletes the old timer and registers the new one)
// gets no heap entry of its own. The deleted timer's entry, which stays in
// the heap until it reaches the top, forwards to it instead, and pushes its
// entry when it gets there; until then nothing later than the deleted
// timer can have fired, so the new one is pushed before anything it must
// follow pops. A timer deleted while unqueued leaves its forwarder free to
// forward to the next one. So a session extended by each of many elements
// keeps one heap entry, not one per element (and no dead entries to drop
// when it fires). The table, the snapshots and the order of firing are
// those without forwarding.
const (
	deadBit  = 1 << 31
	unqBit   = 1 << 30
	klenMask = unqBit - 1
)

// group is one key group's timers of one time domain: an open-addressing
// table (linear probing) of item indexes keyed by a 64-bit hash of (ts, key,
// namespace), a pool of items and an arena of their ids. The table and the
// pool are copy-on-write after a snapshot (ver < Service.snapVer); the
// arena is shared, as it is only appended to, and replaced when compacted.
type group struct {
	slots   []uint64 // 0: empty; else tag<<32 | index+1 (tag&mask is the home slot)
	items   []item
	free    []uint32 // free items of the pool (the task's only)
	arena   []byte
	live    int // timers in the table
	garbage int // arena bytes of items freed since the last compaction
	ver     uint64
}

// queue is one time domain's timers: a heap for order, per-key-group tables
// for deduplication, deletion and snapshots. A deleted timer leaves its
// table at once and the heap when it reaches the top (dead counts those).
type queue struct {
	h      []entry
	dead   int
	groups []group
	// unq counts the unqueued timers; fwd is index+1 of the item, in
	// group fwdGi, deleted last: the next timer registered in that group
	// may be forwarded to from it (see forwarding).
	unq   int
	fwd   uint32
	fwdGi int32
	// mem counts what the queue's items take (timerBytes each), from the
	// hashmap backend's Memory if UseMemory gave one.
	mem budget.Charger
}

// timerBytes is what a timer whose id has n bytes is counted for: its
// item, its heap entry and its id in the arena, each twice (the pool, the
// heap and the arena grow by doubling, and a freed id stays in the arena
// until it is compacted), and three table slots (the table is at most 3/4
// full and doubles). A deleted timer is counted until its heap entry is
// dropped. Not counted: a key group's first table and arena (384 bytes),
// and the tables and pools a snapshot still holds after the task copied
// them.
func timerBytes(n uint32) int64 {
	return 2*int64(unsafe.Sizeof(item{})+unsafe.Sizeof(entry{})) + 2*int64(n) + 3*8
}

// Service is the timer service of one keyed operator subtask.
type Service struct {
	rng     keygroup.Range
	event   queue
	proc    queue
	key     []byte
	ns      []byte
	kh, nh  uint64 // hashes of key and ns
	nsDirty bool   // nh is not ns's yet
	kg      int
	hasKey  bool
	snapVer uint64
}

// New returns an empty timer service for the key groups in rng.
func New(rng keygroup.Range) *Service {
	return &Service{rng: rng, nh: hashBytes(nil, seedNS),
		event: queue{groups: make([]group, rng.Len())},
		proc:  queue{groups: make([]group, rng.Len())}}
}

// UseMemory makes the service count what its timers take against m, the
// hashmap backend's budget (nil: no bound): a registration that would take
// m past its limit panics with a *budget.Error, as a state write does.
// Call it before any timer is registered or restored.
func (s *Service) UseMemory(m *budget.Budget) {
	s.event.mem = budget.NewCharger(m, "timers (event time)", "its timers")
	s.proc.mem = budget.NewCharger(m, "timers (processing time)", "its timers")
}

// Release gives back what the service took from its Memory; the service
// is not used afterwards.
func (s *Service) Release() {
	s.event.mem.Release()
	s.proc.mem.Release()
}

// SetCurrentKey sets the key (copied) that Register and Delete apply to.
func (s *Service) SetCurrentKey(key []byte, kg int) {
	if !s.rng.Contains(kg) {
		panic(fmt.Sprintf("timers: key group %d outside range %v", kg, s.rng))
	}
	s.key = append(s.key[:0], key...)
	s.kh = hashBytes(key, seedKey)
	s.kg, s.hasKey = kg, true
}

// SetCurrentNamespace sets the namespace (copied); empty is none.
func (s *Service) SetCurrentNamespace(ns []byte) {
	s.ns = append(s.ns[:0], ns...)
	s.nsDirty = true
}

// RegisterEventTime registers an event-time timer for the current key and
// namespace; registering the same (key, namespace, ts) twice keeps one.
func (s *Service) RegisterEventTime(ts int64) { s.register(&s.event, ts) }

// DeleteEventTime deletes an event-time timer of the current key and namespace.
func (s *Service) DeleteEventTime(ts int64) { s.delete(&s.event, ts) }

// RegisterProcessingTime registers a processing-time timer.
func (s *Service) RegisterProcessingTime(ts int64) { s.register(&s.proc, ts) }

// DeleteProcessingTime deletes a processing-time timer.
func (s *Service) DeleteProcessingTime(ts int64) { s.delete(&s.proc, ts) }

// Hashing: the key's and the namespace's hashes are taken when they are
// set, and a timer's hash mixes them with its timestamp.
const (
	seedKey = 0x243f6a8885a308d3
	seedNS  = 0x13198a2e03707344
	prime1  = 0x9e3779b97f4a7c15
	prime2  = 0xc2b2ae3d27d4eb4f
	prime3  = 0x165667b19e3779f9
)

func hashBytes(b []byte, seed uint64) uint64 {
	h := seed ^ uint64(len(b))*prime1
	for len(b) >= 8 {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(b))*prime2, 31) * prime1
		b = b[8:]
	}
	if len(b) > 0 {
		var w uint64
		for i, c := range b {
			w |= uint64(c) << (8 * i)
		}
		h = bits.RotateLeft64((h^w)*prime2, 31) * prime1
	}
	return h
}

func hashTimer(ts int64, kh, nh uint64) uint64 {
	h := kh ^ bits.RotateLeft64(nh, 23) ^ uint64(ts)*prime3
	// murmur3's finalizer
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func (s *Service) nsHash() uint64 {
	if s.nsDirty {
		s.nh = hashBytes(s.ns, seedNS)
		s.nsDirty = false
	}
	return s.nh
}

func (s *Service) register(q *queue, ts int64) {
	if !s.hasKey {
		panic("timers: timer registered with no current key")
	}
	s.add(q, s.kg, ts, s.key, s.ns, hashTimer(ts, s.kh, s.nsHash()))
}

func (s *Service) add(q *queue, kg int, ts int64, key, ns []byte, h uint64) {
	gi := kg - s.rng.Start
	if q.groups[gi].find(h, ts, key, ns) >= 0 {
		return
	}
	q.mem.Add(timerBytes(uint32(uvarintLen(len(key)) + len(key) + len(ns))))
	g := s.own(q, gi)
	idx := g.insert(h, ts, key, ns)
	if f := q.fwd; f != 0 && q.fwdGi == int32(gi) {
		// A deleted timer still in the heap (dead and not freed: deleted
		// unqueued timers are freed at once), forwarding to none, earlier.
		if p := &g.items[f-1]; p.n != 0 && p.klen == deadBit && p.ts < ts && idx < klenMask {
			p.klen = deadBit | (idx + 1)
			it := &g.items[idx]
			it.klen |= unqBit
			it.tag = f
			q.unq++
			q.fwd = 0
			return
		}
	}
	q.push(entry{ts: ts, pre: prefix(key, ns), gi: int32(gi), idx: idx})
}

func (s *Service) delete(q *queue, ts int64) {
	if !s.hasKey {
		panic("timers: timer deleted with no current key")
	}
	gi := s.kg - s.rng.Start
	pos := q.groups[gi].find(hashTimer(ts, s.kh, s.nsHash()), ts, s.key, s.ns)
	if pos < 0 {
		return
	}
	g := s.own(q, gi)
	idx := uint32(g.slots[pos]) - 1
	g.removeSlot(pos)
	q.fwdGi = int32(gi)
	if it := &g.items[idx]; it.klen&unqBit != 0 {
		// No heap entry: free it now; its forwarder forwards to none.
		f := it.tag
		g.items[f-1].klen = deadBit
		q.release(g, idx)
		q.unq--
		q.fwd = f
		return
	}
	g.items[idx].klen = deadBit // forwarding to none
	q.dead++
	q.fwd = idx + 1
}

// own returns the group at index gi of q, cloning its table and pool if a
// snapshot shares them.
func (s *Service) own(q *queue, gi int) *group {
	g := &q.groups[gi]
	if g.ver != s.snapVer {
		g.slots = slices.Clone(g.slots)
		g.items = slices.Clone(g.items)
		g.ver = s.snapVer
	}
	return g
}

// find returns the slot of the timer (ts, key, ns) of hash h, or -1.
func (g *group) find(h uint64, ts int64, key, ns []byte) int {
	if g.live == 0 {
		return -1
	}
	mask := len(g.slots) - 1
	tag := uint64(uint32(h))
	for i := int(h) & mask; ; i = (i + 1) & mask {
		v := g.slots[i]
		if v == 0 {
			return -1
		}
		if v>>32 == tag {
			it := &g.items[uint32(v)-1]
			if it.ts == ts && g.idEqual(it, key, ns) {
				return i
			}
		}
	}
}

// idEqual reports whether the id of it is uvarint(len(key)) key ns.
func (g *group) idEqual(it *item, key, ns []byte) bool {
	if int(it.klen&klenMask) != len(key) {
		return false
	}
	hdr := int(it.n) - len(key) - len(ns)
	if hdr != uvarintLen(len(key)) {
		return false
	}
	id := g.arena[int(it.off)+hdr : it.off+it.n]
	return bytes.Equal(id[:len(key)], key) && bytes.Equal(id[len(key):], ns)
}

func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

// insert adds the timer (ts, key, ns) of hash h, which is not there, and
// returns its item's index.
func (g *group) insert(h uint64, ts int64, key, ns []byte) uint32 {
	if (g.live+1)*4 > len(g.slots)*3 {
		g.grow()
	}
	n := uvarintLen(len(key)) + len(key) + len(ns)
	if len(g.arena)+n > cap(g.arena) {
		g.compact(n)
	}
	off := len(g.arena)
	if off+n > 1<<32-1 || len(key) > klenMask {
		panic(fmt.Sprintf("timers: %d bytes of timer keys in one key group", off+n))
	}
	g.arena = binary.AppendUvarint(g.arena, uint64(len(key)))
	g.arena = append(g.arena, key...)
	g.arena = append(g.arena, ns...)
	it := item{ts: ts, off: uint32(off), n: uint32(n), klen: uint32(len(key)), tag: uint32(h)}
	var idx uint32
	if k := len(g.free); k > 0 {
		idx = g.free[k-1]
		g.free = g.free[:k-1]
		g.items[idx] = it
	} else {
		idx = uint32(len(g.items))
		g.items = append(g.items, it)
	}
	mask := len(g.slots) - 1
	i := int(h) & mask
	for g.slots[i] != 0 {
		i = (i + 1) & mask
	}
	g.slots[i] = uint64(uint32(h))<<32 | uint64(idx+1)
	g.live++
	return idx
}

// grow doubles the table (16 slots at first).
func (g *group) grow() {
	old := g.slots
	g.slots = make([]uint64, max(16, 2*len(old)))
	prefault.Fresh(g.slots) // the probes below read before they write
	mask := len(g.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := int(v>>32) & mask
		for g.slots[i] != 0 {
			i = (i + 1) & mask
		}
		g.slots[i] = v
	}
}

// compact replaces the full arena by one with room for need more bytes,
// holding the ids of the items in use only (live or dead in the heap). The
// old arena is left as it is, for snapshots and fired timers.
func (g *group) compact(need int) {
	used := len(g.arena) - g.garbage
	c := max(256, 2*(used+need), len(g.arena)/2)
	a := make([]byte, 0, c)
	if g.garbage == 0 {
		a = append(a, g.arena...)
	} else {
		for i := range g.items {
			it := &g.items[i]
			if it.n == 0 {
				continue
			}
			off := len(a)
			a = append(a, g.arena[it.off:it.off+it.n]...)
			it.off = uint32(off)
		}
	}
	g.arena, g.garbage = a, 0
}

// removeSlot empties slot i, moving later slots of its run back (backward
// shift deletion: no tombstones).
func (g *group) removeSlot(i int) {
	mask := len(g.slots) - 1
	g.live--
	for {
		g.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			v := g.slots[j]
			if v == 0 {
				return
			}
			// v stays unless its home slot k is cyclically outside (i, j].
			k := int(v>>32) & mask
			if i <= j {
				if i < k && k <= j {
					continue
				}
			} else if i < k || k <= j {
				continue
			}
			g.slots[i] = v
			i = j
			break
		}
	}
}

// slotOf returns the slot of item idx, which is in the table.
func (g *group) slotOf(idx uint32) int {
	it := &g.items[idx]
	mask := len(g.slots) - 1
	want := uint64(it.tag)<<32 | uint64(idx+1)
	i := int(it.tag) & mask
	for g.slots[i] != want {
		i = (i + 1) & mask
	}
	return i
}

// release returns item idx of g, a group of q, to the pool, and gives back
// what it was counted for.
func (q *queue) release(g *group, idx uint32) {
	q.mem.Sub(timerBytes(g.items[idx].n))
	g.release(idx)
}

// release returns item idx to the pool.
func (g *group) release(idx uint32) {
	g.garbage += int(g.items[idx].n)
	g.items[idx] = item{}
	g.free = append(g.free, idx)
}

// timer returns item idx of key group kg as a Timer.
func (g *group) timer(idx uint32, kg int) Timer {
	it := &g.items[idx]
	klen := int(it.klen & klenMask)
	id := g.arena[it.off : it.off+it.n : it.off+it.n]
	kn := id[uvarintLen(klen):]
	t := Timer{Timestamp: it.ts, KeyGroup: kg, Key: kn[:klen:klen]}
	if len(kn) > klen {
		t.Namespace = kn[klen:]
	}
	return t
}

// pop removes and returns the earliest timer if it is due at t.
func (s *Service) pop(q *queue, t int64) (Timer, bool) {
	s.dropDead(q)
	if len(q.h) == 0 || q.h[0].ts > t {
		return Timer{}, false
	}
	e := q.pop()
	g := s.own(q, int(e.gi))
	g.removeSlot(g.slotOf(e.idx))
	tm := g.timer(e.idx, int(e.gi)+s.rng.Start)
	q.release(g, e.idx)
	return tm, true
}

// dropDead removes deleted timers from the top of the heap, pushing the
// entries of the timers they forward to.
func (s *Service) dropDead(q *queue) {
	for q.dead > 0 && len(q.h) > 0 && q.groups[q.h[0].gi].items[q.h[0].idx].klen&deadBit != 0 {
		e := q.pop()
		g := s.own(q, int(e.gi))
		if l := g.items[e.idx].klen & klenMask; l != 0 {
			it := &g.items[l-1]
			it.klen &^= unqBit
			id := g.arena[it.off : it.off+it.n]
			klen := int(it.klen)
			kn := id[uvarintLen(klen):]
			it.tag = uint32(hashTimer(it.ts, hashBytes(kn[:klen], seedKey), hashBytes(kn[klen:], seedNS)))
			q.unq--
			var pre [8]byte
			copy(pre[:], id)
			q.push(entry{ts: it.ts, pre: binary.BigEndian.Uint64(pre[:]), gi: e.gi, idx: l - 1})
		}
		q.release(g, e.idx)
		q.dead--
	}
}

// AdvanceWatermark fires, in timestamp order, every event-time timer with
// timestamp <= wm, including timers that fire registers at or below wm.
func (s *Service) AdvanceWatermark(wm int64, fire func(Timer)) {
	for {
		t, ok := s.pop(&s.event, wm)
		if !ok {
			return
		}
		fire(t)
	}
}

// NextProcessingTime returns the earliest processing-time timer.
func (s *Service) NextProcessingTime() (int64, bool) {
	s.dropDead(&s.proc)
	if len(s.proc.h) == 0 {
		return 0, false
	}
	return s.proc.h[0].ts, true
}

// FireProcessingTime fires every processing-time timer with timestamp <= now.
func (s *Service) FireProcessingTime(now int64, fire func(Timer)) {
	for {
		t, ok := s.pop(&s.proc, now)
		if !ok {
			return
		}
		fire(t)
	}
}

// Len returns the number of event-time and processing-time timers.
func (s *Service) Len() (event, processing int) {
	return len(s.event.h) - s.event.dead + s.event.unq, len(s.proc.h) - s.proc.dead + s.proc.unq
}

// Snapshot freezes the timers and returns the two snapshot sources (event
// time, processing time), which may be written from another goroutine.
func (s *Service) Snapshot() []snapshot.Source {
	s.snapVer++
	return []snapshot.Source{
		frozen(snapshot.StateMeta{Name: EventTimeState, Kind: snapshot.KindEventTimers}, s.rng, &s.event),
		frozen(snapshot.StateMeta{Name: ProcessingTimeState, Kind: snapshot.KindProcTimers}, s.rng, &s.proc),
	}
}

type source struct {
	meta   snapshot.StateMeta
	start  int
	groups []group // the table, pool and arena of each group (free is not read)
}

func frozen(meta snapshot.StateMeta, rng keygroup.Range, q *queue) snapshot.Source {
	return &source{meta: meta, start: rng.Start, groups: slices.Clone(q.groups)}
}

func (src *source) Meta() snapshot.StateMeta { return src.meta }

func (src *source) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	i := kg - src.start
	if i < 0 || i >= len(src.groups) {
		return nil
	}
	g := &src.groups[i]
	var v [8]byte
	for _, sl := range g.slots {
		if sl == 0 {
			continue
		}
		t := g.timer(uint32(sl)-1, kg)
		binary.BigEndian.PutUint64(v[:], uint64(t.Timestamp))
		if err := add(snapshot.Entry{Key: t.Key, Namespace: t.Namespace, Value: v[:]}); err != nil {
			return err
		}
	}
	return nil
}

// Restore adds the timers of this service's key groups from a canonical
// snapshot; keyed state entries are skipped.
func (s *Service) Restore(r *snapshot.Reader) error {
	states := r.States()
	// A snapshot without timer states has nothing for this service: do
	// not read its key groups (a second pass over all the keyed state).
	if !slices.ContainsFunc(states, func(m snapshot.StateMeta) bool { return m.Kind.IsTimers() }) {
		return nil
	}
	for _, kg := range r.KeyGroups() {
		if !s.rng.Contains(kg) {
			continue
		}
		err := r.ReadKeyGroup(kg, func(e snapshot.Entry) error {
			return s.RestoreEntry(kg, states[e.State].Kind, e)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RestoreEntry adds the timer of one snapshot entry of key group kg, of a
// state of the given kind (entries of other kinds are ignored), for a
// caller that reads the snapshot itself (snapshot.Reader.SetTimerReader).
func (s *Service) RestoreEntry(kg int, kind snapshot.Kind, e snapshot.Entry) error {
	var q *queue
	switch kind {
	case snapshot.KindEventTimers:
		q = &s.event
	case snapshot.KindProcTimers:
		q = &s.proc
	default:
		return nil
	}
	if !s.rng.Contains(kg) {
		return nil
	}
	if len(e.Value) != 8 {
		return fmt.Errorf("timers: key group %d: timer value of %d bytes, want 8", kg, len(e.Value))
	}
	ts := int64(binary.BigEndian.Uint64(e.Value))
	h := hashTimer(ts, hashBytes(e.Key, seedKey), hashBytes(e.Namespace, seedNS))
	s.add(q, kg, ts, e.Key, e.Namespace, h)
	return nil
}

// entry is a timer in the heap, with what orders it: the heap compares
// entries without reading their items, which lie elsewhere in memory (a
// window operator keeps a timer per key and window, and its firings were
// mostly cache misses on items in the heap's comparisons and swaps).
type entry struct {
	ts int64
	// pre is the first 8 bytes of the item's id (uvarint(len(key)) and
	// the key's first bytes), big-endian and zero-padded: its order is the
	// ids' order unless equal, and then the ids decide.
	pre uint64
	gi  int32  // the key group's index in the service's range
	idx uint32 // the item's in the group's pool
}

func prefix(key, ns []byte) uint64 {
	var b [8]byte
	n := binary.PutUvarint(b[:], uint64(len(key)))
	n += copy(b[n:], key)
	copy(b[n:], ns)
	return binary.BigEndian.Uint64(b[:])
}

// less orders timers by timestamp, then key group, key and namespace (the
// id), so firing order is deterministic.
func (q *queue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.gi != b.gi {
		return a.gi < b.gi
	}
	if a.pre != b.pre {
		return a.pre < b.pre
	}
	g := &q.groups[a.gi]
	x, y := &g.items[a.idx], &g.items[b.idx]
	return bytes.Compare(g.arena[x.off:x.off+x.n], g.arena[y.off:y.off+y.n]) < 0
}

// push and pop are container/heap's, on entries: through its interface
// every entry pushed or popped was boxed, an allocation each.
func (q *queue) push(e entry) {
	q.h = append(q.h, e)
	h := q.h
	for j := len(h) - 1; j > 0; {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

// pop removes and returns the least entry; the heap must not be empty.
func (q *queue) pop() entry {
	h := q.h
	n := len(h) - 1
	top := h[0]
	h[0] = h[n]
	h = h[:n]
	q.h = h
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j+1 < n && q.less(j+1, j) {
			j++
		}
		if !q.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	return top
}
