package pebblekv

import (
	"encoding/binary"
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
	for i, m := range r.States() {
		if m.Kind.IsTimers() {
			continue
		}
		t, err := d.restoreTable(m)
		if err != nil {
			return err
		}
		tables[i] = t
	}
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

// restoreTable finds or creates the table for a restored state.
func (d *DB) restoreTable(m snapshot.StateMeta) (*Table, error) {
	if t, ok := d.tables[m.Name]; ok {
		if t.meta.Kind != m.Kind {
			return nil, fmt.Errorf("state %q: snapshot has %s state, the backend %s", m.Name, m.Kind, t.meta.Kind)
		}
		if snapshot.CodecMismatch(m.Codec, t.meta.Codec) {
			return nil, snapshot.CodecChangeError(m.Name, m.Codec, t.meta.Codec)
		}
		return t, nil
	}
	return d.Table(m)
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
		t, err := d.restoreTable(ot.meta)
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
