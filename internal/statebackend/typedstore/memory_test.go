package typedstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// tablesBytes is what Memory should hold for tbl: computed from the
// tables' sizes, not from what grow added up.
func tablesBytes[E any](tbl *Table[E]) int64 {
	var n int64
	for i := range tbl.groups {
		n += tableBytes[E](tbl.groups[i].t.size())
	}
	return n
}

// TestMemoryBoundsTables grows the tables of two stores that share a
// Memory: what it holds is the sum of their sizes after every insert (a
// Snapshot in between changes nothing: unlike Freeze's, what it holds is
// not counted), and the
// insert whose growth would pass the limit fails with a budget.Error
// naming the setting, taking nothing; Release gives a store's share back.
func TestMemoryBoundsTables(t *testing.T) {
	const limit = 1 << 20
	m := budget.New(limit)
	var stores [2]*Store
	var tables [2]*Table[int64]
	for i := range stores {
		stores[i] = NewStore(keygroup.Range{Start: 4 * i, End: 4*i + 3}, 128, clock.NewManual(0))
		stores[i].UseMemory(m)
		tbl, err := NewTable(stores[i], snapshot.StateMeta{Name: "counts", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
		if err != nil {
			t.Fatal(err)
		}
		tables[i] = tbl
	}
	insert := func(i int, k uint64) (err error) {
		defer func() {
			if r := recover(); r != nil {
				var me *budget.Error
				if e, ok := r.(error); !ok || !errors.As(e, &me) {
					panic(r)
				}
				err = me
			}
		}()
		stores[i].SetCurrentKeyWord(k, 4*i+int(k%4))
		tables[i].Insert().Val = int64(k)
		return nil
	}
	var failed error
	inserted := 0
	for k := uint64(0); failed == nil; k++ {
		i := int(k % 2)
		if k == 3000 {
			stores[0].Snapshot()
			stores[1].Snapshot()
		}
		used := m.Used()
		if failed = insert(i, k); failed != nil {
			if m.Used() != used {
				t.Fatalf("a failed growth took %d bytes", m.Used()-used)
			}
			break
		}
		inserted++
		if want := tablesBytes(tables[0]) + tablesBytes(tables[1]); m.Used() != want {
			t.Fatalf("after %d keys: Memory holds %d bytes, the tables take %d", inserted, m.Used(), want)
		}
		if inserted > 1<<20 {
			t.Fatal("no failure: the bound does not hold")
		}
	}
	msg := failed.Error()
	for _, want := range []string{`keyed state "counts"`, "weir.Config.HeapStateMemory", "--heap-state-memory", "1048576", "pebble"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if m.Used() > limit || m.Used() < limit/4 {
		t.Errorf("failed at %d bytes of %d: growth stopped far from the bound", m.Used(), limit)
	}
	t.Logf("%d keys in %d bytes of tables; then: %v", inserted, m.Used(), failed)
	before := m.Used()
	stores[0].Release()
	if got, want := m.Used(), before-tablesBytes(tables[0]); got != want {
		t.Fatalf("after one store's Release: %d bytes, want %d", got, want)
	}
	stores[1].Release()
	if m.Used() != 0 {
		t.Fatalf("after both stores' Release: %d bytes", m.Used())
	}
}
