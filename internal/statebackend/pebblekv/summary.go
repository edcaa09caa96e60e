package pebblekv

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
)

// StateSummary sums one state of a native checkpoint.
type StateSummary struct {
	Meta    snapshot.StateMeta
	Keys    int64 // distinct keys
	Records int64 // Pebble records: one per key and namespace (a list's elements are one record), per map user key
	Bytes   int64 // of the records' keys and values, as stored
}

// SummarizeNative opens the Pebble checkpoint in dir read-only and sums
// each state over the key groups of rng, for inspection. It reads in key
// order, so a key's records are adjacent and distinct keys are counted
// without remembering them: memory does not grow with the state.
func SummarizeNative(dir string, rng keygroup.Range) ([]StateSummary, error) {
	po, unref := pebbleOptions(Options{CacheBytes: 8 << 20})
	po.ReadOnly = true
	src, err := pebble.Open(dir, po)
	unref()
	if err != nil {
		return nil, fmt.Errorf("pebblekv: opening checkpoint %s: %w", dir, err)
	}
	defer src.Close()
	old := &DB{db: src, tables: map[string]*Table{}}
	if err := old.loadMeta(); err != nil {
		return nil, err
	}
	var out []StateSummary
	for _, t := range old.sortedTables() {
		s := StateSummary{Meta: t.meta}
		for kg := rng.Start; kg <= rng.End; kg++ {
			lo := binary.BigEndian.AppendUint16(nil, uint16(kg))
			lo = binary.BigEndian.AppendUint16(lo, t.id)
			it, err := src.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
			if err != nil {
				return nil, err
			}
			var prev []byte
			have := false
			for it.First(); it.Valid(); it.Next() {
				k := it.Key()
				s.Records++
				s.Bytes += int64(len(k) + len(it.Value()))
				// After the key group and state id: uvarint key length, key.
				rest := k[4:]
				n, w := binary.Uvarint(rest)
				if w <= 0 || n > uint64(len(rest)-w) {
					it.Close()
					return nil, fmt.Errorf("pebblekv: checkpoint %s: state %q has a malformed key in key group %d", dir, t.meta.Name, kg)
				}
				key := rest[w : w+int(n)]
				if !have || !bytes.Equal(prev, key) {
					s.Keys++
					prev, have = append(prev[:0], key...), true
				}
			}
			err = it.Error()
			it.Close()
			if err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}
