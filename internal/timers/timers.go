package timers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
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

type item struct {
	Timer
	id string // dedup key within a key group: ts | uvarint(len(key)) key | ns
	// dead marks a deleted timer, which its heap entry outlives until it
	// reaches the top (written by the task goroutine only).
	dead bool
}

type group struct {
	m   map[string]*item
	ver uint64 // shared with a snapshot when ver < Service.snapVer
}

// queue is one time domain's timers: a heap for order, per-key-group maps for
// deduplication, deletion and snapshots. A deleted timer leaves the maps
// at once and the heap when it reaches the top (dead counts those).
type queue struct {
	h      itemHeap
	dead   int
	groups []group
}

// Service is the timer service of one keyed operator subtask.
type Service struct {
	rng     keygroup.Range
	event   queue
	proc    queue
	key     []byte
	ns      []byte
	kg      int
	hasKey  bool
	snapVer uint64
	idbuf   []byte
}

// New returns an empty timer service for the key groups in rng.
func New(rng keygroup.Range) *Service {
	return &Service{rng: rng,
		event: queue{groups: make([]group, rng.Len())},
		proc:  queue{groups: make([]group, rng.Len())}}
}

// SetCurrentKey sets the key (copied) that Register and Delete apply to.
func (s *Service) SetCurrentKey(key []byte, kg int) {
	if !s.rng.Contains(kg) {
		panic(fmt.Sprintf("timers: key group %d outside range %v", kg, s.rng))
	}
	s.key = append(s.key[:0], key...)
	s.kg, s.hasKey = kg, true
}

// SetCurrentNamespace sets the namespace (copied); empty is none.
func (s *Service) SetCurrentNamespace(ns []byte) { s.ns = append(s.ns[:0], ns...) }

// RegisterEventTime registers an event-time timer for the current key and
// namespace; registering the same (key, namespace, ts) twice keeps one.
func (s *Service) RegisterEventTime(ts int64) { s.register(&s.event, ts) }

// DeleteEventTime deletes an event-time timer of the current key and namespace.
func (s *Service) DeleteEventTime(ts int64) { s.delete(&s.event, ts) }

// RegisterProcessingTime registers a processing-time timer.
func (s *Service) RegisterProcessingTime(ts int64) { s.register(&s.proc, ts) }

// DeleteProcessingTime deletes a processing-time timer.
func (s *Service) DeleteProcessingTime(ts int64) { s.delete(&s.proc, ts) }

func (s *Service) id(ts int64, key, ns []byte) []byte {
	b := binary.BigEndian.AppendUint64(s.idbuf[:0], uint64(ts))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	s.idbuf = append(b, ns...)
	return s.idbuf
}

func (s *Service) register(q *queue, ts int64) {
	if !s.hasKey {
		panic("timers: timer registered with no current key")
	}
	s.add(q, Timer{Timestamp: ts, KeyGroup: s.kg, Key: s.key, Namespace: s.ns})
}

func (s *Service) add(q *queue, t Timer) {
	id := s.id(t.Timestamp, t.Key, t.Namespace)
	g := &q.groups[t.KeyGroup-s.rng.Start]
	if _, ok := g.m[string(id)]; ok {
		return
	}
	g = s.own(q, t.KeyGroup)
	// One allocation for the id, the key and the namespace: the id holds
	// both, and none of them is ever written.
	b := bytes.Clone(id)
	kn := b[len(id)-len(t.Key)-len(t.Namespace):]
	it := &item{Timer: Timer{Timestamp: t.Timestamp, KeyGroup: t.KeyGroup,
		Key: kn[:len(t.Key):len(t.Key)], Namespace: kn[len(t.Key):]}, id: unsafe.String(unsafe.SliceData(b), len(b))}
	if t.Namespace == nil {
		it.Namespace = nil // as bytes.Clone gave
	}
	g.m[it.id] = it
	q.h.push(entryOf(it))
}

func (s *Service) delete(q *queue, ts int64) {
	if !s.hasKey {
		panic("timers: timer deleted with no current key")
	}
	id := s.id(ts, s.key, s.ns)
	it, ok := q.groups[s.kg-s.rng.Start].m[string(id)]
	if !ok {
		return
	}
	delete(s.own(q, s.kg).m, it.id)
	it.dead = true
	q.dead++
}

// own returns key group kg's map, cloning it if a snapshot shares it.
func (s *Service) own(q *queue, kg int) *group {
	g := &q.groups[kg-s.rng.Start]
	if g.ver != s.snapVer {
		g.m = maps.Clone(g.m)
		g.ver = s.snapVer
	}
	if g.m == nil {
		g.m = map[string]*item{}
	}
	return g
}

// pop removes and returns the earliest timer if it is due at t.
func (s *Service) pop(q *queue, t int64) (Timer, bool) {
	q.dropDead()
	if len(q.h) == 0 || q.h[0].ts > t {
		return Timer{}, false
	}
	it := q.h.pop().it
	delete(s.own(q, it.KeyGroup).m, it.id)
	return it.Timer, true
}

// dropDead removes deleted timers from the top of the heap.
func (q *queue) dropDead() {
	for q.dead > 0 && len(q.h) > 0 && q.h[0].it.dead {
		q.h.pop()
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
	s.proc.dropDead()
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
	return len(s.event.h) - s.event.dead, len(s.proc.h) - s.proc.dead
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
	meta  snapshot.StateMeta
	start int
	maps  []map[string]*item
}

func frozen(meta snapshot.StateMeta, rng keygroup.Range, q *queue) snapshot.Source {
	ms := make([]map[string]*item, len(q.groups))
	for i, g := range q.groups {
		ms[i] = g.m
	}
	return &source{meta: meta, start: rng.Start, maps: ms}
}

func (src *source) Meta() snapshot.StateMeta { return src.meta }

func (src *source) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	i := kg - src.start
	if i < 0 || i >= len(src.maps) {
		return nil
	}
	var v [8]byte
	for _, it := range src.maps[i] {
		binary.BigEndian.PutUint64(v[:], uint64(it.Timestamp))
		if err := add(snapshot.Entry{Key: it.Key, Namespace: it.Namespace, Value: v[:]}); err != nil {
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
	s.add(q, Timer{Timestamp: int64(binary.BigEndian.Uint64(e.Value)), KeyGroup: kg, Key: e.Key, Namespace: e.Namespace})
	return nil
}

// entry is a timer in the heap, with what orders it: the heap compares
// entries without reading their items, which lie elsewhere in memory (a
// window operator keeps a timer per key and window, and its firings were
// mostly cache misses on items in the heap's comparisons and swaps).
type entry struct {
	ts int64
	kg int
	// pre is the first 8 bytes of the item's id after the timestamp
	// (uvarint(len(key)) and the key's first bytes), big-endian and
	// zero-padded: its order is the ids' order unless equal, and then
	// the ids decide.
	pre uint64
	it  *item
}

func entryOf(it *item) entry {
	var b [8]byte
	copy(b[:], it.id[8:])
	return entry{ts: it.Timestamp, kg: it.KeyGroup, pre: binary.BigEndian.Uint64(b[:]), it: it}
}

// itemHeap orders timers by timestamp, then key group, key and namespace, so
// firing order is deterministic.
type itemHeap []entry

func (h itemHeap) less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.kg != b.kg {
		return a.kg < b.kg
	}
	if a.pre != b.pre {
		return a.pre < b.pre
	}
	return a.it.id < b.it.id
}

// push and pop are container/heap's, on entries: through its interface
// every entry pushed or popped was boxed, an allocation each.
func (h *itemHeap) push(e entry) {
	*h = append(*h, e)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the least entry; the heap must not be empty.
func (h *itemHeap) pop() entry {
	q := *h
	n := len(q) - 1
	top := q[0]
	q[0] = q[n]
	q[n] = entry{}
	q = q[:n]
	*h = q
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
		q[i], q[j] = q[j], q[i]
		i = j
	}
	return top
}
