package pebblekv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
)

// Options bound Pebble's memory.
type Options struct {
	CacheBytes    int64 // block cache; default 64 MiB
	MemTableBytes int64 // one memtable; default 16 MiB
	// WriteCacheBytes bounds the write-back cache of single-value states
	// (see writeCache); default 8 MiB. A snapshot writes back at most this much.
	WriteCacheBytes int64
}

// metaKG is the reserved key group that holds state metadata, under keys
// metaKG (2 bytes) | 'm' | state name.
const metaKG = 0xFFFF

// metaPrefix starts every metadata key; metaEnd is just past them.
var (
	metaPrefix = []byte{metaKG >> 8, metaKG & 0xFF, 'm'}
	metaEnd    = []byte{metaKG >> 8, metaKG & 0xFF, 'm' + 1}
)

// DB is the Pebble database of one subtask. Owned by the task goroutine,
// except Snapshot views and checkpoints, which other goroutines read.
type DB struct {
	db     *pebble.DB
	dir    string
	opts   Options
	rng    keygroup.Range
	maxPar int
	clock  clock.Clock
	wo     *pebble.WriteOptions

	cur    []byte // kg | id | key | ns, with id 0 (tables patch their id in)
	key    []byte
	ns     []byte
	kg     int
	hasKey bool
	ukey   []byte // scratch: cur | user key
	vbuf   []byte // scratch: encoded values and copies of read values

	tables map[string]*Table
	nextID uint16

	wc            writeCache
	memTableBytes int64  // bounds write-back batches (see writeBackBatch)
	epoch         uint64 // changes with the current key or namespace and on cache eviction; starts at 1
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(string, ...any)        {}
func (quietLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

func pebbleOptions(o Options) (*pebble.Options, func()) {
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.MemTableBytes <= 0 {
		o.MemTableBytes = 16 << 20
	}
	c := pebble.NewCache(o.CacheBytes)
	po := &pebble.Options{
		Cache:                       c,
		MemTableSize:                uint64(o.MemTableBytes),
		MemTableStopWritesThreshold: 2,
		// No WAL: the working DB never outlives its process (a restarted
		// task restores from a checkpoint into a fresh directory), and a
		// checkpoint flushes the memtable first. Saves a WAL append per
		// write, and keeps recycled WAL files (copied whole, stale tail
		// included) out of the checkpoints.
		DisableWAL: true,
		Logger:     quietLogger{},
		Merger:     listMerger, // concatenation: list appends, linear (merge.go)
	}
	// Bloom filters let a point read skip the levels that do not hold the
	// key: without them every Get seeks in every level (measured: most of
	// the CPU of a read-modify-write at millions of keys).
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return po, c.Unref
}

// Open opens (or creates) the DB in dir.
func Open(dir string, o Options, rng keygroup.Range, maxPar int, c clock.Clock) (*DB, error) {
	po, unref := pebbleOptions(o)
	db, err := pebble.Open(dir, po)
	unref() // the DB holds its own reference
	if err != nil {
		return nil, fmt.Errorf("pebblekv: opening %s: %w", dir, err)
	}
	d := &DB{db: db, dir: dir, opts: o, rng: rng, maxPar: maxPar, clock: c, wo: pebble.NoSync,
		tables: map[string]*Table{}, nextID: 1, memTableBytes: int64(po.MemTableSize)}
	if err := d.loadMeta(); err != nil {
		db.Close()
		return nil, err
	}
	d.cur = make([]byte, 4, 64)
	if o.WriteCacheBytes <= 0 {
		o.WriteCacheBytes = 8 << 20
	}
	d.wc = writeCache{m: map[string]*cacheEntry{}, limit: o.WriteCacheBytes}
	d.epoch = 1
	return d, nil
}

// Close closes the DB.
func (d *DB) Close() error { return d.db.Close() }

// CacheBytes is the current size of the write-back cache.
func (d *DB) CacheBytes() int64 { return d.wc.bytes }

// Pebble returns the underlying DB (for checkpoints and metrics).
func (d *DB) Pebble() *pebble.DB { return d.db }

// Now is the processing time used for TTL.
func (d *DB) Now() int64 { return d.clock.NowMillis() }

// SetCurrentKey sets the current key (copied) and key group.
func (d *DB) SetCurrentKey(key []byte, kg int) {
	if !d.rng.Contains(kg) {
		panic(fmt.Sprintf("state: key group %d outside this subtask's range %v", kg, d.rng))
	}
	d.key = append(d.key[:0], key...)
	d.kg, d.hasKey = kg, true
	d.rebuild()
}

// SetCurrentNamespace sets the namespace (copied).
func (d *DB) SetCurrentNamespace(ns []byte) {
	d.ns = append(d.ns[:0], ns...)
	d.rebuild()
}

func (d *DB) rebuild() {
	d.epoch++
	b := binary.BigEndian.AppendUint16(d.cur[:0], uint16(d.kg))
	b = append(b, 0, 0)
	b = binary.AppendUvarint(b, uint64(len(d.key)))
	b = append(b, d.key...)
	b = binary.AppendUvarint(b, uint64(len(d.ns)))
	d.cur = append(b, d.ns...)
}

func metaKey(name string) []byte {
	return append(append([]byte(nil), metaPrefix...), name...)
}

func encodeMeta(id uint16, m snapshot.StateMeta) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, byte(m.Kind))
	b = binary.AppendVarint(b, m.TTLMillis)
	b = append(b, byte(m.TTLUpdate))
	// The codec identity came later: metadata without it (older databases
	// and native checkpoints) ends after the TTL update byte.
	if m.Codec != "" || m.Schema != "" || m.KeySchema != "" {
		b = binary.AppendUvarint(b, uint64(len(m.Codec)))
		b = append(b, m.Codec...)
	}
	// So did the schemas: after the codec identity, when there are any.
	if m.Schema != "" || m.KeySchema != "" {
		for _, s := range []string{m.Schema, m.KeySchema} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// decodeMeta decodes encodeMeta's output for state name. The value comes
// from a database that may be a downloaded native checkpoint, so it is
// checked, never trusted (FuzzDecodeMeta).
func decodeMeta(name string, v []byte) (snapshot.StateMeta, uint16, error) {
	if len(v) < 4 {
		return snapshot.StateMeta{}, 0, fmt.Errorf("pebblekv: corrupt metadata of state %q", name)
	}
	id := binary.BigEndian.Uint16(v)
	ttl, n := binary.Varint(v[3:])
	if n <= 0 || len(v) < 3+n+1 {
		return snapshot.StateMeta{}, 0, fmt.Errorf("pebblekv: corrupt metadata of state %q", name)
	}
	m := snapshot.StateMeta{Name: name, Kind: snapshot.Kind(v[2]), TTLMillis: ttl, TTLUpdate: snapshot.TTLUpdate(v[3+n])}
	rest := v[3+n+1:]
	for i, f := range []*string{&m.Codec, &m.Schema, &m.KeySchema} {
		if len(rest) == 0 && i != 2 {
			break // older metadata: no codec, or no schemas
		}
		l, w := binary.Uvarint(rest)
		if w <= 0 || l > uint64(len(rest)-w) {
			return snapshot.StateMeta{}, 0, fmt.Errorf("pebblekv: corrupt metadata of state %q (codec identity or schema)", name)
		}
		*f, rest = string(rest[w:w+int(l)]), rest[w+int(l):]
	}
	if len(rest) != 0 {
		return snapshot.StateMeta{}, 0, fmt.Errorf("pebblekv: corrupt metadata of state %q (%d trailing bytes)", name, len(rest))
	}
	return m, id, nil
}

func (d *DB) loadMeta() error {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: metaPrefix, UpperBound: metaEnd})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[3:])
		m, id, err := decodeMeta(name, it.Value())
		if err != nil {
			return err
		}
		d.tables[name] = newTable(d, m, id)
		d.nextID = max(d.nextID, id+1)
	}
	return it.Error()
}

// Table returns the table of a state, creating it (and persisting its id)
// on first use. A state restored with TTL on cannot be opened with TTL off
// and the other way round (the value layout differs). Restored state whose
// metadata differs from m is attached through snapshot.Resolve with
// evolve, and its bytes are rewritten here, once (migrateTable).
func (d *DB) Table(m snapshot.StateMeta, evolve snapshot.Evolve) (*Table, error) {
	if t, ok := d.tables[m.Name]; ok {
		if t.meta.Kind != m.Kind {
			return nil, fmt.Errorf("state %q holds %s state, requested as %s", m.Name, t.meta.Kind, m.Kind)
		}
		if t.meta.HasTTL() != m.HasTTL() {
			return nil, fmt.Errorf("state %q: turning TTL on or off for existing state is not supported by the pebble backend (stored TTL %d ms, requested %d ms)",
				m.Name, t.meta.TTLMillis, m.TTLMillis)
		}
		mig, err := snapshot.Resolve(t.meta, m, evolve)
		if err != nil {
			return nil, err
		}
		t.registered, t.evolve = true, evolve
		if !mig.None() {
			if err := d.migrateTable(t, mig); err != nil {
				return nil, fmt.Errorf("state %q: migrating restored entries: %w", m.Name, err)
			}
			t.meta = snapshot.StateMeta{} // the id changed: persist the metadata
		}
		if t.meta != m {
			t.meta = m
			if err := d.db.Set(metaKey(m.Name), encodeMeta(t.id, m), d.wo); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	if d.nextID == 0xFFFF {
		return nil, errors.New("pebblekv: too many states")
	}
	t := newTable(d, m, d.nextID)
	t.registered, t.evolve = true, evolve
	if err := d.db.Set(metaKey(m.Name), encodeMeta(t.id, m), d.wo); err != nil {
		return nil, err
	}
	d.nextID++
	d.tables[m.Name] = t
	return t, nil
}

// ForEachKey calls fn with every key (a copy of its bytes) and its key
// group that has an entry of the state named name in no namespace, key
// group by key group, until fn returns an error, which it returns. It
// writes the cache back first, and gathers a key group's keys before
// calling fn for them, so fn may set the current key and write or delete
// entries. A state not registered has no keys.
func (d *DB) ForEachKey(name string, fn func(key []byte, kg int) error) error {
	t, ok := d.tables[name]
	if !ok || !t.registered {
		return nil
	}
	if err := d.FlushCache(); err != nil {
		return err
	}
	var keys [][]byte
	for kg := d.rng.Start; kg <= d.rng.End; kg++ {
		var err error
		if keys, err = t.appendKeys(kg, keys[:0]); err != nil {
			return err
		}
		for _, k := range keys {
			if err := fn(k, kg); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendKeys appends copies of the keys of key group kg that have an
// entry of t in no namespace (a map's entries share their key: it is
// appended once).
func (t *Table) appendKeys(kg int, dst [][]byte) ([][]byte, error) {
	p := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, uint16(kg)), t.id)
	it, err := t.d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return dst, err
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(p):]
		n, w := binary.Uvarint(k)
		if w <= 0 || n > uint64(len(k)-w) {
			it.Close()
			return dst, fmt.Errorf("pebblekv: state %q: corrupt key in key group %d", t.meta.Name, kg)
		}
		key := k[w : w+int(n)]
		if nsLen, w2 := binary.Uvarint(k[w+int(n):]); w2 <= 0 || nsLen != 0 {
			continue
		}
		if len(dst) > 0 && bytes.Equal(dst[len(dst)-1], key) {
			continue
		}
		dst = append(dst, append([]byte(nil), key...))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return dst, err
	}
	return dst, it.Close()
}

// sortedTables returns the tables by name.
func (d *DB) sortedTables() []*Table {
	out := make([]*Table, 0, len(d.tables))
	for _, t := range d.tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.Name < out[j].meta.Name })
	return out
}
