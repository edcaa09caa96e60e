package heap

import (
	"encoding/binary"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
)

// BenchmarkTableRMW is the table alone under the statebackend benchmark's
// access pattern: what the state API and its interfaces add shows as the
// difference from BenchmarkValueRMW/hashmap.
func BenchmarkTableRMW(b *testing.B) {
	const n, maxPar = 10_000, 128
	s := NewStore(keygroup.Range{Start: 0, End: maxPar - 1}, maxPar, clock.NewManual(0))
	t, err := NewTable(s, snapshot.StateMeta{Name: "c", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
	if err != nil {
		b.Fatal(err)
	}
	kgs := make([]uint16, n)
	var kb [8]byte
	for i := range int64(n) {
		kgs[i] = uint16(keygroup.ForHash(keygroup.HashInt64(i), maxPar))
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		s.SetCurrentKey(kb[:], int(kgs[i]))
		t.Insert()
	}
	step := int64(2654435761 % n)
	b.ResetTimer()
	for i, key := 0, int64(0); i < b.N; i++ {
		if key += step; key >= n {
			key -= n
		}
		binary.BigEndian.PutUint64(kb[:], uint64(key))
		s.SetCurrentKey(kb[:], int(kgs[key]))
		e := t.Lookup()
		t.Writable(e).Val++
	}
}
