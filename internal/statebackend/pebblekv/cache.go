package pebblekv

import (
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// writeCache is a bounded write-back cache in front of Pebble for the
// single-value states (value, reducing, aggregating): a record's
// read-modify-write of a hot key is then two Go map operations instead of a
// Pebble Get (a memtable skiplist seek, ~1.5 µs) and a Set (another seek and
// a WAL append). Misses read through; writes stay in the cache until it is
// over its byte limit (then about half of it is written back in one batch
// and dropped) or until a snapshot, which writes back every dirty entry
// first so that Pebble alone holds the snapshot's state.
//
// Lists and maps bypass the cache: they are appended with merges and
// iterated, which the LSM does well.
type writeCache struct {
	m     map[string]*cacheEntry // by full Pebble key
	bytes int64
	limit int64
}

type cacheEntry struct {
	val     []byte // stored value layout (TTL timestamp, codec bytes)
	present bool   // false: the key is absent (deleted, or known missing)
	dirty   bool   // differs from Pebble
}

const entryOverhead = 64 // map slot, entry struct, headers

func (c *writeCache) size(key string, e *cacheEntry) int64 {
	return int64(len(key)+cap(e.val)) + entryOverhead
}

// lookup returns the cached entry of key, or nil.
func (c *writeCache) lookup(key []byte) *cacheEntry { return c.m[string(key)] }

// insert caches a new entry, making room first if needed.
func (d *DB) cacheInsert(key []byte, e *cacheEntry) error {
	c := &d.wc
	if c.bytes > c.limit {
		if err := d.evict(c.limit / 2); err != nil {
			return err
		}
	}
	k := string(key)
	c.m[k] = e
	c.bytes += c.size(k, e)
	return nil
}

// evict writes back dirty entries and drops entries until the cache holds
// at most target bytes. Tables' cached entry pointers are invalidated.
func (d *DB) evict(target int64) error {
	c := &d.wc
	w := writeBackBatch{d: d}
	defer w.close()
	for k, e := range c.m {
		if c.bytes <= target {
			break
		}
		if e.dirty {
			if err := w.add(k, e); err != nil {
				return err
			}
		}
		c.bytes -= c.size(k, e)
		delete(c.m, k)
	}
	d.epoch++
	return w.commit()
}

// writeBackBatch writes cache entries back in batches of at most a quarter
// of a memtable. Pebble keeps a batch over half a memtable as a separate
// sorted "flushable batch" that every later Get binary-searches until it is
// flushed: with a 256 MiB write-back cache, evicting half of it in one
// batch put 40% of the CPU of reads there. No reader needs the write-back
// to be atomic: the task goroutine does it between records.
type writeBackBatch struct {
	d *DB
	b *pebble.Batch
}

func (w *writeBackBatch) add(k string, e *cacheEntry) error {
	if w.b == nil {
		w.b = w.d.db.NewBatch()
	}
	var err error
	if e.present {
		err = w.b.Set([]byte(k), e.val, nil)
	} else {
		err = w.b.Delete([]byte(k), nil)
	}
	if err != nil {
		return err
	}
	if int64(w.b.Len()) > w.d.memTableBytes/4 {
		return w.commit()
	}
	return nil
}

func (w *writeBackBatch) commit() error {
	if w.b == nil {
		return nil
	}
	err := w.b.Commit(w.d.wo)
	w.close()
	return err
}

func (w *writeBackBatch) close() {
	if w.b != nil {
		w.b.Close()
		w.b = nil
	}
}

// FlushCache writes every dirty cached entry to Pebble (keeping it cached).
// Snapshots call it first; its cost is bounded by the cache's byte limit.
func (d *DB) FlushCache() error {
	w := writeBackBatch{d: d}
	defer w.close()
	for k, e := range d.wc.m {
		if e.dirty {
			if err := w.add(k, e); err != nil {
				return err
			}
			e.dirty = false
		}
	}
	return w.commit()
}

// dropCache writes back and forgets every cached entry (before a restore
// writes to Pebble directly).
func (d *DB) dropCache() error {
	if err := d.evict(-1); err != nil {
		return err
	}
	if len(d.wc.m) != 0 {
		return errors.New("pebblekv: cache not empty after eviction")
	}
	return nil
}

// cachedEntry returns the current key's cache entry, reading it from
// Pebble on a miss if read is set (a blind write does not need the old
// value). The entry stays valid until the next call on the DB that may
// evict (a miss, a restore).
func (t *Table) cachedEntry(read bool) (*cacheEntry, error) {
	d := t.d
	if t.lastEpoch == d.epoch && t.last != nil {
		return t.last, nil
	}
	k := t.prefix()
	e := d.wc.lookup(k)
	if e == nil {
		e = &cacheEntry{}
		var v []byte
		var closer io.Closer
		err := pebble.ErrNotFound
		if read {
			v, closer, err = d.db.Get(k)
		}
		switch {
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			e.val = append([]byte(nil), v...)
			e.present = true
			closer.Close()
		}
		if err := d.cacheInsert(k, e); err != nil {
			return nil, err
		}
	}
	t.last, t.lastEpoch = e, d.epoch
	return e, nil
}
