package pebblekv

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirhq/weir/internal/snapshot"
)

// View is a consistent read-only view of the DB for a canonical snapshot.
// Its sources may be read from another goroutine; Close releases it.
type View struct {
	snap    *pebble.Snapshot
	sources []snapshot.Source
}

// Snapshot takes a Pebble snapshot (cheap: a sequence number) and returns
// one canonical source per state. Expired TTL entries (by now) are left out.
func (d *DB) Snapshot() (*View, error) {
	if err := d.FlushCache(); err != nil {
		return nil, err
	}
	v := &View{snap: d.db.NewSnapshot()}
	now := d.clock.NowMillis()
	for _, t := range d.sortedTables() {
		v.sources = append(v.sources, &viewSource{snap: v.snap, meta: t.meta, id: t.id, now: now})
	}
	return v, nil
}

// Sources returns the states of the view.
func (v *View) Sources() []snapshot.Source { return v.sources }

// Close releases the Pebble snapshot.
func (v *View) Close() error { return v.snap.Close() }

type viewSource struct {
	snap *pebble.Snapshot
	meta snapshot.StateMeta
	id   uint16
	now  int64
}

func (s *viewSource) Meta() snapshot.StateMeta { return s.meta }

func (s *viewSource) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	lo := binary.BigEndian.AppendUint16(nil, uint16(kg))
	lo = binary.BigEndian.AppendUint16(lo, s.id)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	defer it.Close()
	t := newTable(nil, s.meta, s.id)
	for it.First(); it.Valid(); it.Next() {
		e, err := parseKey(it.Key())
		if err != nil {
			return fmt.Errorf("state %q: %w", s.meta.Name, err)
		}
		if s.meta.Kind == snapshot.KindList {
			var aerr error
			err = t.eachElem(it.Value(), func(elem []byte, ts int64) bool {
				if t.ttl() && ts+s.meta.TTLMillis <= s.now {
					return true
				}
				e.Value, e.HasTS, e.TS = elem, t.ttl(), ts
				aerr = add(e)
				return aerr == nil
			})
			if err == nil {
				err = aerr
			}
			if err != nil {
				return err
			}
			continue
		}
		v, ts, err := t.splitValue(it.Value())
		if err != nil {
			return err
		}
		if t.ttl() && ts+s.meta.TTLMillis <= s.now {
			continue
		}
		e.Value, e.HasTS, e.TS = v, t.ttl(), ts
		e.HasUserKey = s.meta.Kind == snapshot.KindMap
		if err := add(e); err != nil {
			return err
		}
	}
	return it.Error()
}

// parseKey splits a data key into key, namespace and user key.
func parseKey(k []byte) (snapshot.Entry, error) {
	var e snapshot.Entry
	if len(k) < 4 {
		return e, fmt.Errorf("pebblekv: short key %x", k)
	}
	b := k[4:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return e, fmt.Errorf("pebblekv: corrupt key %x", k)
	}
	e.Key, b = b[w:w+int(n)], b[w+int(n):]
	n, w = binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return e, fmt.Errorf("pebblekv: corrupt key %x", k)
	}
	e.Namespace, e.UserKey = b[w:w+int(n)], b[w+int(n):]
	return e, nil
}

// CheckpointFile is one file of a checkpoint.
type CheckpointFile struct {
	Name string
	Size int64
	SST  bool
}

// Checkpoint writes a Pebble checkpoint (hard-linked SSTs, copied MANIFEST
// and OPTIONS) to dir. The DB has no WAL, so it writes back the write cache
// and flushes the memtable first: the changes since the previous checkpoint
// are then in new SST files only, which is what makes checkpoints
// incremental. The flush is the expensive part of the synchronous phase,
// bounded by the memtable size.
func (d *DB) Checkpoint(dir string) error {
	if err := d.FlushCache(); err != nil {
		return err
	}
	if err := d.db.Flush(); err != nil {
		return err
	}
	return d.db.Checkpoint(dir, pebble.WithFlushedWAL())
}

// ListCheckpoint lists the files of a checkpoint directory.
func ListCheckpoint(dir string) ([]CheckpointFile, error) {
	var out []CheckpointFile
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, CheckpointFile{Name: rel, Size: info.Size(), SST: strings.HasSuffix(rel, ".sst")})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}
