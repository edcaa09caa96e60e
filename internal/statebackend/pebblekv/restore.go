package pebblekv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirhq/weir/internal/snapshot"
)

const restoreBatchBytes = 4 << 20

// batcher commits a batch whenever it grows past restoreBatchBytes.
type batcher struct {
	d *DB
	b *pebble.Batch
}

func (bt *batcher) maybeCommit() error {
	if bt.b.Len() < restoreBatchBytes {
		return nil
	}
	return bt.commit()
}

func (bt *batcher) commit() error {
	if bt.b.Empty() {
		return nil
	}
	err := bt.b.Commit(bt.d.wo)
	bt.b.Close()
	bt.b = bt.d.db.NewBatch()
	return err
}

func (bt *batcher) close() error {
	err := bt.commit()
	bt.b.Close()
	return err
}

// RestoreCanonical writes the entries of this DB's key groups from a
// canonical snapshot. Timer states are skipped.
func (d *DB) RestoreCanonical(r *snapshot.Reader) error {
	if err := d.dropCache(); err != nil {
		return err
	}
	tables := make([]*Table, len(r.States()))
	migs := make([]snapshot.Migration, len(r.States()))
	for i, m := range r.States() {
		if m.Kind.IsTimers() {
			continue
		}
		t, mig, err := d.restoreTable(m)
		if err != nil {
			return err
		}
		tables[i], migs[i] = t, mig
	}
	var mb []byte
	bt := &batcher{d: d, b: d.db.NewBatch()}
	var kb, vb []byte
	for _, kg := range r.KeyGroups() {
		if !d.rng.Contains(kg) {
			continue
		}
		restoredTTL := r.States()
		err := r.ReadKeyGroup(kg, func(e snapshot.Entry) error {
			t := tables[e.State]
			if t == nil {
				return nil
			}
			ts := e.TS
			if t.ttl() && (!e.HasTS || !restoredTTL[e.State].HasTTL()) {
				ts = d.Now()
			}
			if mig := migs[e.State]; !mig.None() {
				var err error
				if e, mb, err = migrateEntry(mig, e, mb); err != nil {
					return fmt.Errorf("state %q: migrating key group %d: %w", t.meta.Name, kg, err)
				}
			}
			kb = dataKey(kb[:0], kg, t.id, e.Key, e.Namespace)
			var err error
			switch t.meta.Kind {
			case snapshot.KindList:
				vb = t.appendElem(vb[:0], e.Value, ts)
				err = bt.b.Merge(kb, vb, nil)
			case snapshot.KindMap:
				kb = append(kb, e.UserKey...)
				vb = t.appendValue(vb[:0], e.Value, ts)
				err = bt.b.Set(kb, vb, nil)
			default:
				vb = t.appendValue(vb[:0], e.Value, ts)
				err = bt.b.Set(kb, vb, nil)
			}
			if err != nil {
				return err
			}
			return bt.maybeCommit()
		})
		if err != nil {
			bt.b.Close()
			return err
		}
	}
	return bt.close()
}

// restoreTable finds or creates the table for a restored state, and says
// how its entries migrate: a table that an operator registered already
// (a restore after Open) migrates them as it restores them; one not yet
// registered keeps them as they are, for DB.Table to migrate.
func (d *DB) restoreTable(m snapshot.StateMeta) (*Table, snapshot.Migration, error) {
	if t, ok := d.tables[m.Name]; ok {
		if t.meta.Kind != m.Kind {
			return nil, snapshot.Migration{}, fmt.Errorf("state %q: snapshot has %s state, the backend %s", m.Name, m.Kind, t.meta.Kind)
		}
		if !t.registered {
			if snapshot.CodecMismatch(m.Codec, t.meta.Codec) || m.Schema != t.meta.Schema || m.KeySchema != t.meta.KeySchema {
				return nil, snapshot.Migration{}, fmt.Errorf("state %q: snapshots disagree on its codec or schema (%q, %q)", m.Name, m.Codec, t.meta.Codec)
			}
			return t, snapshot.Migration{}, nil
		}
		mig, err := snapshot.Resolve(m, t.meta, t.evolve)
		return t, mig, err
	}
	t, err := d.Table(m, nil)
	if err == nil {
		t.registered = false // created for the restored bytes, not by an operator
	}
	return t, snapshot.Migration{}, err
}

// migrateEntry applies m to a restored entry, using buf as scratch.
func migrateEntry(m snapshot.Migration, e snapshot.Entry, buf []byte) (snapshot.Entry, []byte, error) {
	buf = buf[:0]
	var err error
	if m.UserKey != nil && e.HasUserKey {
		if buf, err = m.UserKey(buf, e.UserKey); err != nil {
			return e, buf, err
		}
		e.UserKey = buf[:len(buf):len(buf)]
	}
	if m.Value != nil {
		start := len(buf)
		if buf, err = m.Value(buf, e.Value); err != nil {
			return e, buf, err
		}
		e.Value = buf[start:]
	}
	return e, buf, nil
}

// migrateTable rewrites every entry of a restored table through m into a
// new table id, then deletes the old id's entries: writing into a fresh
// key range keeps rewritten map user keys from meeting unmigrated ones.
// Pebble keeps encoded values, so a schema change is migrated here, once,
// when the operator registers the state after the restore; reads and
// writes afterwards never check a schema.
func (d *DB) migrateTable(t *Table, m snapshot.Migration) error {
	if err := d.dropCache(); err != nil {
		return err
	}
	if d.nextID == 0xFFFF {
		return errors.New("pebblekv: too many states")
	}
	newID := d.nextID
	d.nextID++
	bt := &batcher{d: d, b: d.db.NewBatch()}
	var kb, vb, mb []byte
	for kg := d.rng.Start; kg <= d.rng.End; kg++ {
		lo := binary.BigEndian.AppendUint16(nil, uint16(kg))
		lo = binary.BigEndian.AppendUint16(lo, t.id)
		it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			bt.b.Close()
			return err
		}
		for it.First(); it.Valid() && err == nil; it.Next() {
			var e snapshot.Entry
			if e, err = parseKey(it.Key()); err != nil {
				break
			}
			kb = dataKey(kb[:0], kg, newID, e.Key, e.Namespace)
			vb = vb[:0]
			if t.meta.Kind == snapshot.KindList {
				var merr error
				err = t.eachElem(it.Value(), func(elem []byte, ts int64) bool {
					e.Value = elem
					if e, mb, merr = migrateEntry(m, e, mb); merr == nil {
						vb = t.appendElem(vb, e.Value, ts)
					}
					return merr == nil
				})
				if err == nil {
					err = merr
				}
			} else {
				var ts int64
				if e.Value, ts, err = t.splitValue(it.Value()); err == nil {
					e.HasUserKey = t.meta.Kind == snapshot.KindMap
					if e, mb, err = migrateEntry(m, e, mb); err == nil {
						kb = append(kb, e.UserKey...)
						vb = t.appendValue(vb, e.Value, ts)
					}
				}
			}
			if err == nil {
				err = bt.b.Set(kb, vb, nil)
			}
			if err == nil {
				err = bt.maybeCommit()
			}
		}
		if err == nil {
			err = it.Error()
		}
		it.Close()
		if err == nil {
			err = bt.b.DeleteRange(lo, prefixEnd(lo), nil)
		}
		if err != nil {
			bt.b.Close()
			return err
		}
	}
	if err := bt.close(); err != nil {
		return err
	}
	t.id, t.last = newID, nil
	d.epoch++
	return nil
}

func dataKey(dst []byte, kg int, id uint16, key, ns []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	dst = binary.BigEndian.AppendUint16(dst, id)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(ns)))
	return append(dst, ns...)
}

// RestoreNative copies this DB's key groups from a Pebble checkpoint
// directory, opened read-only, translating state ids by name.
func (d *DB) RestoreNative(dir string) error {
	if err := d.dropCache(); err != nil {
		return err
	}
	po, unref := pebbleOptions(Options{CacheBytes: 8 << 20, MemTableBytes: d.opts.MemTableBytes})
	po.ReadOnly = true
	src, err := pebble.Open(dir, po)
	unref()
	if err != nil {
		return fmt.Errorf("pebblekv: opening checkpoint %s: %w", dir, err)
	}
	defer src.Close()
	old := &DB{db: src, tables: map[string]*Table{}}
	if err := old.loadMeta(); err != nil {
		return err
	}
	bt := &batcher{d: d, b: d.db.NewBatch()}
	for _, ot := range old.sortedTables() {
		t, mig, err := d.restoreTable(ot.meta)
		if err == nil && !mig.None() {
			err = fmt.Errorf("state %q: a native checkpoint restored after the state was registered cannot migrate its schema; restore before opening the operator", t.meta.Name)
		}
		if err != nil {
			bt.b.Close()
			return err
		}
		if t.ttl() != ot.ttl() {
			bt.b.Close()
			return fmt.Errorf("state %q: TTL was turned on or off; restore from a canonical snapshot instead", t.meta.Name)
		}
		for kg := d.rng.Start; kg <= d.rng.End; kg++ {
			lo := binary.BigEndian.AppendUint16(nil, uint16(kg))
			lo = binary.BigEndian.AppendUint16(lo, ot.id)
			it, err := src.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
			if err != nil {
				bt.b.Close()
				return err
			}
			var kb []byte
			for it.First(); it.Valid(); it.Next() {
				kb = append(kb[:0], it.Key()...)
				binary.BigEndian.PutUint16(kb[2:], t.id)
				if t.meta.Kind == snapshot.KindList {
					err = bt.b.Merge(kb, it.Value(), nil)
				} else {
					err = bt.b.Set(kb, it.Value(), nil)
				}
				if err == nil {
					err = bt.maybeCommit()
				}
				if err != nil {
					break
				}
			}
			if err == nil {
				err = it.Error()
			}
			it.Close()
			if err != nil {
				bt.b.Close()
				return err
			}
		}
	}
	return bt.close()
}
