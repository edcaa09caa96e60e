package typedstore

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/shortkey"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// Store holds the typed tables of one keyed operator subtask. It is owned by
// the task goroutine; only frozen snapshot views are read elsewhere.
type Store struct {
	// Pads: the current-key fields are written on every record; keep them
	// off the cache lines of neighbouring objects, such as the store of
	// another subtask (false sharing; see keyedruntime.Core).
	_      [64]byte
	rng    keygroup.Range
	maxPar int
	clock  clock.Clock

	// cur is the map key of the current key and namespace. It is not
	// built for a short key with no namespace (curStale): the image holds
	// its bytes, and tables read cur only for long keys.
	cur      []byte
	curStale bool
	keyEnd   int    // cur[:keyEnd] is uvarint(len(key)) | key
	ns       []byte // current namespace (a copy)
	kg       int
	kgIdx    int // kg - rng.Start, or -1 before the first SetCurrentKey

	snapVer uint64 // incremented by every snapshot; see package doc
	// epoch changes whenever the current key or namespace does, so a table
	// may cache the entry it looked up last (Value then Update costs one
	// map lookup). It starts at 1: a table's zero lastEpoch never matches.
	epoch uint64

	im      keyImage // imageOf(cur), if imEpoch == epoch
	imEpoch uint64

	// With a short key (keyShort), kw0 and kw1 are the words of
	// uvarint(len(key)) | key, and nw0 and nw1 those of ns (when ns is
	// short): a short key with a short namespace (a window's state) gets
	// its image from words, without building cur, as a key with no
	// namespace does.
	keyShort bool
	kw0, kw1 uint64
	nw0, nw1 uint64

	tables  map[string]erased
	list    []erased        // the tables in order of registration
	pending map[string]*raw // restored states not registered yet
	// evolve holds the registered states' evolve functions (SetEvolve),
	// which attach and Restore use when restored metadata differs.
	evolve map[string]snapshot.Evolve
	// probe is CurrentLines' scratch: a local one escaped to the heap
	// through the erased interface, an allocation per element.
	probe Probe
	// mem bounds the tables' memory (nil: unbounded); memTaken is what
	// they took from it.
	mem      *budget.Budget
	memTaken int64
	// memUsed is what the tables and values take of memTaken (values
	// take ahead, see growValues).
	memUsed int64
	// frozen lists the snapshots taken by Freeze, oldest first, that may
	// not be released yet (pruned at each Freeze).
	frozen []*frozen
	_      [64]byte
}

// erased is a Table[E] with its type erased.
type erased interface {
	meta() snapshot.StateMeta
	source(now int64) snapshot.Source
	restore(kg int, mapKey []byte, e snapshot.Entry, restoredTS bool) error
	reserve(kg, n int)
	ageVersions(v uint64)
	ProbeLines(p *Probe, dst []uintptr) ([]uintptr, bool)
	SlotBytes() uintptr
	Len() int
	appendKeys(idx int, dst [][]byte) [][]byte
}

// NewStore returns an empty store for the key groups in rng.
func NewStore(rng keygroup.Range, maxParallelism int, c clock.Clock) *Store {
	return &Store{rng: rng, maxPar: maxParallelism, clock: c, kgIdx: -1, epoch: 1,
		tables: map[string]erased{}, pending: map[string]*raw{}, evolve: map[string]snapshot.Evolve{}}
}

// SetEvolve gives the state of the name the function that decides how its
// restored entries migrate when their metadata differs from the
// registered state's (snapshot.Resolve). Call it before NewTable.
func (s *Store) SetEvolve(name string, e snapshot.Evolve) {
	if e != nil {
		s.evolve[name] = e
	}
}

// Epoch changes whenever the current key or namespace does (and at a
// Restore): a caller that saw the same epoch before knows that both are
// still what they were then, and that each table's cached entry is.
func (s *Store) Epoch() uint64 { return s.epoch }

// Now is the processing time used for TTL.
func (s *Store) Now() int64 { return s.clock.NowMillis() }

// SetCurrentKey sets the key (encoded bytes, copied) and its key group for
// the following state accesses, keeping the current namespace.
func (s *Store) SetCurrentKey(key []byte, kg int) {
	idx := kg - s.rng.Start
	if uint(idx) >= uint(s.rng.End-s.rng.Start+1) {
		s.badKeyGroup(kg)
	}
	s.kg, s.kgIdx = kg, idx
	s.epoch++
	if s.keyShort = len(key) < inlineKey; s.keyShort {
		// Every record of a keyed operator comes here: the image is all
		// the tables need, and cur is built only if asked for.
		n := len(key)
		k0, k1 := shortkey.Words(key)
		s.kw0, s.kw1, s.keyEnd = uint64(n)|k0<<8, k0>>56|k1<<8, n+1
		if n+1+len(s.ns) <= inlineKey {
			s.im, s.imEpoch = s.shortNsImage(), s.epoch
			s.curStale = true
			return
		}
	}
	s.setCur(key)
}

// SetCurrentKeyWord is SetCurrentKey for an 8-byte key given as the
// little-endian word of its bytes (a 64-bit integer key): the same state,
// without loading the words back from the key's bytes.
func (s *Store) SetCurrentKeyWord(k0 uint64, kg int) {
	idx := kg - s.rng.Start
	if uint(idx) >= uint(s.rng.End-s.rng.Start+1) {
		s.badKeyGroup(kg)
	}
	s.kg, s.kgIdx = kg, idx
	s.epoch++
	s.keyShort = true
	s.kw0, s.kw1, s.keyEnd = wordKey0(k0), wordKey1(k0), 9
	if 9+len(s.ns) <= inlineKey {
		s.im, s.imEpoch = s.shortNsImage(), s.epoch
		s.curStale = true
		return
	}
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], k0)
	s.setCur(key[:])
}

// wordKey0 and wordKey1 are the words of the map key of an 8-byte key
// given as its little-endian word k0: its length, then its bytes.
func wordKey0(k0 uint64) uint64 { return 8 | k0<<8 }
func wordKey1(k0 uint64) uint64 { return k0 >> 56 }

// wordImage is the image of the map key of an 8-byte key under no
// namespace: shortNsImage after SetCurrentKeyWord(k0, ...) with none.
func wordImage(k0 uint64) keyImage { return shortImage(wordKey0(k0), wordKey1(k0), 9) }

// shortNsImage is the image of the map key of a short key and namespace
// from their words: the namespace's bytes follow the key's keyEnd bytes.
func (s *Store) shortNsImage() keyImage {
	w0, w1 := s.kw0, s.kw1
	if len(s.ns) > 0 {
		if off := uint(s.keyEnd) * 8; off < 64 {
			w0 |= s.nw0 << off
			w1 |= s.nw0>>(64-off) | s.nw1<<off
		} else {
			w1 |= s.nw0 << (off - 64)
		}
	}
	return shortImage(w0, w1, s.keyEnd+len(s.ns))
}

func (s *Store) badKeyGroup(kg int) {
	panic(fmt.Sprintf("state: key group %d outside this subtask's range %v", kg, s.rng))
}

// setCur builds cur from key and the namespace.
func (s *Store) setCur(key []byte) {
	var b []byte
	if len(key) < 0x80 {
		b = append(s.cur[:0], byte(len(key))) // the one-byte uvarint
	} else {
		b = binary.AppendUvarint(s.cur[:0], uint64(len(key)))
	}
	b = append(b, key...)
	s.keyEnd = len(b)
	s.cur = append(b, s.ns...)
	s.curStale = false
}

// materialize builds cur if it is stale.
func (s *Store) materialize() {
	if s.curStale {
		s.cur = appendShort(s.cur[:0], s.im.hn, s.im.w0, s.im.w1)
		s.curStale = false
	}
}

// SetCurrentNamespace sets the namespace (copied); empty means none.
func (s *Store) SetCurrentNamespace(ns []byte) {
	if s.keyShort && s.keyEnd+len(ns) <= inlineKey {
		s.ns = append(s.ns[:0], ns...)
		s.nw0, s.nw1 = shortkey.Words(ns)
		s.epoch++
		s.im, s.imEpoch = s.shortNsImage(), s.epoch
		s.curStale = true
		return
	}
	s.materialize()
	s.ns = append(s.ns[:0], ns...)
	if len(ns) <= inlineKey {
		s.nw0, s.nw1 = shortkey.Words(ns)
	}
	s.cur = append(s.cur[:s.keyEnd], ns...)
	s.epoch++
}

// CurrentKey returns the current key bytes (valid until the next SetCurrentKey).
func (s *Store) CurrentKey() []byte {
	s.materialize()
	_, n := binary.Uvarint(s.cur)
	return s.cur[n:s.keyEnd]
}

func (s *Store) attach(name string, t erased) error {
	if _, ok := s.tables[name]; ok {
		return fmt.Errorf("state %q: typed table registered twice", name)
	}
	s.tables[name] = t
	s.list = append(s.list, t)
	r := s.pending[name]
	if r == nil {
		return nil
	}
	delete(s.pending, name)
	if r.meta.Kind != t.meta().Kind {
		return fmt.Errorf("state %q was restored as %s state but is registered as %s state", name, r.meta.Kind, t.meta().Kind)
	}
	mig, err := snapshot.Resolve(r.meta, t.meta(), s.evolve[name])
	if err != nil {
		return err
	}
	var mk []byte
	var mb migrateBufs
	// Kinds with one entry per key: the table can be sized for a key
	// group's entries before they go in. (A map or list state has an
	// entry per user key or element, often many per key.)
	sized := r.meta.Kind == snapshot.KindValue || r.meta.Kind == snapshot.KindReducing || r.meta.Kind == snapshot.KindAggregating
	for i, es := range r.groups {
		if sized && len(es) > 0 {
			t.reserve(s.rng.Start+i, len(es))
		}
		for _, e := range es {
			if !mig.None() {
				if e, err = mb.apply(mig, e); err != nil {
					return fmt.Errorf("state %q: migrating key group %d: %w", name, s.rng.Start+i, err)
				}
			}
			mk = mapKey(mk[:0], e.Key, e.Namespace)
			if err := t.restore(s.rng.Start+i, mk, e, r.meta.HasTTL()); err != nil {
				return fmt.Errorf("state %q: restoring key group %d: %w", name, s.rng.Start+i, err)
			}
		}
	}
	return nil
}

func mapKey(dst, key, ns []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, ns...)
}

// splitMapKey splits a map key into key and namespace. The slices alias b
// (while snapshotting: a scratch copy of a short key, or a long key's
// string, not copied per entry): they are only read.
func splitMapKey(b []byte) (key, ns []byte) {
	n, w := binary.Uvarint(b)
	return b[w : w+int(n)], b[w+int(n):]
}

// image returns the key image of the current map key, computed once per
// key and namespace for all tables.
func (s *Store) image() *keyImage {
	if s.imEpoch != s.epoch {
		s.materialize()
		s.im, s.imEpoch = imageOf(s.cur), s.epoch
	}
	return &s.im
}

// CurrentLines appends to dst, for each of the store's tables, the cache
// lines of the slots where a lookup of the current key and namespace
// probably finds its entry (Table.ProbeLines), and returns it: for
// an operator that does not know which of its function's states an
// element will read, prefetching the lines of a run of elements' keys
// first makes their cache misses overlap.
func (s *Store) CurrentLines(dst []uintptr) []uintptr {
	p := &s.probe
	for _, t := range s.list {
		dst, _ = t.ProbeLines(p, dst)
	}
	return dst
}

// SlotBytes is the sum of the slot sizes of the store's tables: what
// CurrentLines names per key, give or take a cache line per table.
func (s *Store) SlotBytes() uintptr {
	var n uintptr
	for _, t := range s.list {
		n += t.SlotBytes()
	}
	return n
}

// Entries is the number of entries of all keys and namespaces in all the
// store's tables.
func (s *Store) Entries() int {
	n := 0
	for _, t := range s.list {
		n += t.Len()
	}
	return n
}

// verAge masks the snapshot versions at which Snapshot ages every
// entry's version first (Table.ageVersions): once every 2^31, half the
// round of the 32 bits a slot keeps.
const verAge = 1<<31 - 1

// Snapshot freezes every table (see the package doc) and returns sources
// that can be written from another goroutine. Expired TTL entries (by now)
// are left out.
func (s *Store) Snapshot() []snapshot.Source {
	if (s.snapVer+1)&verAge == 0 {
		// Slots keep 32 bits of version (Table.owned): every 2^31
		// snapshots, age them all.
		for _, t := range s.list {
			t.ageVersions(s.snapVer)
		}
	}
	s.snapVer++
	now := s.clock.NowMillis()
	var out []snapshot.Source
	for _, name := range sortedKeys(s.tables) {
		out = append(out, s.tables[name].source(now))
	}
	for _, name := range sortedKeys(s.pending) {
		out = append(out, s.pending[name].source(now))
	}
	return out
}

// ForEachKey calls fn with every key (a copy of its bytes) and its key
// group that has an entry of the state named name in no namespace, key
// group by key group, until fn returns an error, which it returns. It
// gathers a key group's keys before calling fn for them, so fn may set the
// current key and write or delete entries. A state not registered has no
// keys.
func (s *Store) ForEachKey(name string, fn func(key []byte, kg int) error) error {
	t, ok := s.tables[name]
	if !ok {
		return nil
	}
	var keys [][]byte
	for i := range s.rng.Len() {
		keys = t.appendKeys(i, keys[:0])
		for _, k := range keys {
			if err := fn(k, s.rng.Start+i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore adds the entries of the key groups in this store's range from a
// canonical snapshot. Timer states are skipped (they belong to the timer
// service). Restore before registering states; entries of states registered
// already are decoded immediately.
func (s *Store) Restore(r *snapshot.Reader) error {
	s.materialize()
	s.epoch++
	states := r.States()
	var mk []byte
	var mb migrateBufs
	migs := make([]*snapshot.Migration, len(states)) // decided once per state
	for _, kg := range r.KeyGroups() {
		if !s.rng.Contains(kg) {
			continue
		}
		err := r.ReadKeyGroup(kg, func(e snapshot.Entry) error {
			m := states[e.State]
			if m.Kind.IsTimers() {
				return nil
			}
			if t, ok := s.tables[m.Name]; ok {
				if t.meta().Kind != m.Kind {
					return fmt.Errorf("state %q: snapshot has %s state, registered as %s", m.Name, m.Kind, t.meta().Kind)
				}
				if migs[e.State] == nil {
					mig, err := snapshot.Resolve(m, t.meta(), s.evolve[m.Name])
					if err != nil {
						return err
					}
					migs[e.State] = &mig
				}
				if mig := migs[e.State]; !mig.None() {
					var err error
					if e, err = mb.apply(*mig, e); err != nil {
						return fmt.Errorf("state %q: migrating key group %d: %w", m.Name, kg, err)
					}
				}
				mk = mapKey(mk[:0], e.Key, e.Namespace)
				return t.restore(kg, mk, e, m.HasTTL())
			}
			p := s.pending[m.Name]
			if p == nil {
				p = &raw{meta: m, groups: make([][]snapshot.Entry, s.rng.Len()), start: s.rng.Start}
				s.pending[m.Name] = p
			} else if p.meta.Kind != m.Kind {
				return fmt.Errorf("state %q: snapshots disagree on its kind (%s, %s)", m.Name, p.meta.Kind, m.Kind)
			} else if snapshot.CodecMismatch(p.meta.Codec, m.Codec) {
				return fmt.Errorf("state %q: snapshots disagree on its codec (%q, %q)", m.Name, p.meta.Codec, m.Codec)
			} else if p.meta.Codec == "" {
				p.meta.Codec = m.Codec
			}
			p.add(kg, e)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// migrateBufs holds the scratch of migrated entries: a table's Restore
// decodes the entry before the next one is migrated.
type migrateBufs struct{ value, userKey []byte }

func (b *migrateBufs) apply(m snapshot.Migration, e snapshot.Entry) (snapshot.Entry, error) {
	var err error
	if m.Value != nil {
		if b.value, err = m.Value(b.value[:0], e.Value); err != nil {
			return e, err
		}
		e.Value = b.value
	}
	if m.UserKey != nil && e.HasUserKey {
		if b.userKey, err = m.UserKey(b.userKey[:0], e.UserKey); err != nil {
			return e, err
		}
		e.UserKey = b.userKey
	}
	return e, nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
