package pebblekv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirhq/weir/internal/snapshot"
)

// Table is the byte-level view of one state, addressed by the DB's current
// key and namespace. It implements spi.KVTable.
type Table struct {
	d      *DB
	meta   snapshot.StateMeta
	id     uint16
	cached bool // single-value state: goes through the DB's write-back cache
	// registered: an operator has opened the table (DB.Table); until
	// then it holds restored bytes under the snapshot's metadata.
	registered bool
	evolve     snapshot.Evolve // the registered state's, for restores after registration

	last      *cacheEntry // cache entry of the current key if lastEpoch == d.epoch
	lastEpoch uint64
}

func newTable(d *DB, m snapshot.StateMeta, id uint16) *Table {
	k := m.Kind
	return &Table{d: d, meta: m, id: id,
		cached: k == snapshot.KindValue || k == snapshot.KindReducing || k == snapshot.KindAggregating}
}

// prefix returns the current key's prefix for this table (aliases d.cur).
func (t *Table) prefix() []byte {
	if !t.d.hasKey {
		panic("state: accessed keyed state " + t.meta.Name + " with no current key")
	}
	binary.BigEndian.PutUint16(t.d.cur[2:], t.id)
	return t.d.cur
}

func (t *Table) fullKey(userKey []byte) []byte {
	p := t.prefix()
	if userKey == nil {
		return p
	}
	t.d.ukey = append(append(t.d.ukey[:0], p...), userKey...)
	return t.d.ukey
}

func (t *Table) ttl() bool { return t.meta.HasTTL() }

// splitValue separates the TTL timestamp from a stored value.
func (t *Table) splitValue(v []byte) ([]byte, int64, error) {
	if !t.ttl() {
		return v, 0, nil
	}
	if len(v) < 8 {
		return nil, 0, fmt.Errorf("pebblekv: state %q: value of %d bytes has no TTL timestamp", t.meta.Name, len(v))
	}
	return v[8:], int64(binary.BigEndian.Uint64(v)), nil
}

func (t *Table) appendValue(dst, v []byte, ts int64) []byte {
	if t.ttl() {
		dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	}
	return append(dst, v...)
}

// Get implements spi.KVTable.
func (t *Table) Get(userKey []byte) ([]byte, int64, bool, error) {
	if t.cached && userKey == nil {
		e, err := t.cachedEntry(true)
		if err != nil || !e.present {
			return nil, 0, false, err
		}
		b, ts, err := t.splitValue(e.val)
		return b, ts, err == nil, err
	}
	v, closer, err := t.d.db.Get(t.fullKey(userKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	t.d.vbuf = append(t.d.vbuf[:0], v...)
	closer.Close()
	b, ts, err := t.splitValue(t.d.vbuf)
	return b, ts, err == nil, err
}

// Set implements spi.KVTable.
func (t *Table) Set(userKey, value []byte, ts int64) error {
	if t.cached && userKey == nil {
		e, err := t.cachedEntry(false)
		if err != nil {
			return err
		}
		old := cap(e.val)
		e.val = t.appendValue(e.val[:0], value, ts)
		e.present, e.dirty = true, true
		t.d.wc.bytes += int64(cap(e.val) - old)
		return nil
	}
	t.d.vbuf = t.appendValue(t.d.vbuf[:0], value, ts)
	return t.d.db.Set(t.fullKey(userKey), t.d.vbuf, t.d.wo)
}

// Delete implements spi.KVTable.
func (t *Table) Delete(userKey []byte) error {
	if t.cached && userKey == nil {
		e, err := t.cachedEntry(false)
		if err != nil {
			return err
		}
		e.val, e.present, e.dirty = e.val[:0], false, true
		return nil
	}
	return t.d.db.Delete(t.fullKey(userKey), t.d.wo)
}

// DeleteAll implements spi.KVTable: a range deletion over the map's prefix.
func (t *Table) DeleteAll() error {
	p := t.prefix()
	return t.d.db.DeleteRange(p, prefixEnd(p), t.d.wo)
}

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Scan implements spi.KVTable.
func (t *Table) Scan(fn func(userKey, value []byte, ts int64) bool) error {
	p := append([]byte(nil), t.prefix()...)
	it, err := t.d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, ts, err := t.splitValue(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if !fn(it.Key()[len(p):], v, ts) {
			break
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// Append implements spi.KVTable with a merge operand of one element.
func (t *Table) Append(elem []byte, ts int64) error {
	t.d.vbuf = t.appendElem(t.d.vbuf[:0], elem, ts)
	return t.d.db.Merge(t.prefix(), t.d.vbuf, t.d.wo)
}

func (t *Table) appendElem(dst, elem []byte, ts int64) []byte {
	if t.ttl() {
		dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	}
	dst = binary.AppendUvarint(dst, uint64(len(elem)))
	return append(dst, elem...)
}

// SetList implements spi.KVTable.
func (t *Table) SetList(elems [][]byte, ts []int64) error {
	if len(elems) == 0 {
		return t.Delete(nil)
	}
	b := t.d.vbuf[:0]
	for i, e := range elems {
		var s int64
		if ts != nil {
			s = ts[i]
		}
		b = t.appendElem(b, e, s)
	}
	t.d.vbuf = b
	return t.d.db.Set(t.prefix(), b, t.d.wo)
}

// ScanList implements spi.KVTable.
func (t *Table) ScanList(fn func(elem []byte, ts int64) bool) error {
	v, closer, err := t.d.db.Get(t.prefix())
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return t.eachElem(v, fn)
}

func (t *Table) eachElem(v []byte, fn func(elem []byte, ts int64) bool) error {
	for len(v) > 0 {
		var ts int64
		if t.ttl() {
			if len(v) < 8 {
				return fmt.Errorf("pebblekv: state %q: truncated list element", t.meta.Name)
			}
			ts = int64(binary.BigEndian.Uint64(v))
			v = v[8:]
		}
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return fmt.Errorf("pebblekv: state %q: corrupt list element", t.meta.Name)
		}
		if !fn(v[w:w+int(n)], ts) {
			return nil
		}
		v = v[w+int(n):]
	}
	return nil
}
