package statebackend

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/state"
)

// TestHeapMemoryCountsStringsAndSnapshots: on the hashmap backend with a
// Memory, a ValueState's strings are counted; overwriting them while a
// checkpoint's snapshot is pending keeps the old ones counted until the
// snapshot is materialized (which releases it); and restoring more
// strings than a bound holds fails, when the state is registered, with
// a MemoryError naming the setting.
func TestHeapMemoryCountsStringsAndSnapshots(t *testing.T) {
	const keys, size = 100, 10 << 10
	newKeyed := func(m *budget.Budget) (Keyed, state.ValueState[string]) {
		k, err := New(Config{Kind: KindHashMap, MaxParallelism: schemaMaxPar,
			Range: keygroup.Range{Start: 0, End: schemaMaxPar - 1}, Clock: clock.NewManual(0), HeapMemory: m})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k, state.GetValueState(k, state.ValueDescriptor[string]{Name: "s", Codec: codec.String()})
	}
	m := budget.New(1 << 30)
	k, v := newKeyed(m)
	write := func(c string) {
		for i := range keys {
			setSchemaKey(k, i)
			v.Update(strings.Repeat(c, size))
		}
	}
	write("a")
	p, err := k.Snapshot(1, Canonical)
	if err != nil {
		t.Fatal(err)
	}
	live := m.Used()
	if live < keys*size {
		t.Fatalf("%d strings of %d bytes: the Memory holds %d bytes", keys, size, live)
	}
	write("b")
	setSchemaKey(k, 0)
	v.Update(strings.Repeat("b", size)) // settles the last key's write
	held := m.Used() - live
	if held < keys*size {
		t.Fatalf("overwriting %d strings of %d bytes a snapshot holds: %d more bytes counted", keys, size, held)
	}
	if _, err := p.Materialize(io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := m.Used(); got > live+size {
		t.Fatalf("after the snapshot was written the Memory holds %d bytes, %d before the overwrite", got, live)
	}
	src := canonical(t, k, 3)

	k2, err := New(Config{Kind: KindHashMap, MaxParallelism: schemaMaxPar,
		Range: keygroup.Range{Start: 0, End: schemaMaxPar - 1}, Clock: clock.NewManual(0), HeapMemory: budget.New(keys * size / 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if err := k2.Restore([]Source{src}); err != nil {
		t.Fatal(err)
	}
	var me *budget.Error
	func() {
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(error); !ok || !errors.As(e, &me) {
					panic(r)
				}
			}
		}()
		state.GetValueState(k2, state.ValueDescriptor[string]{Name: "s", Codec: codec.String()})
	}()
	if me == nil || !strings.Contains(me.Error(), "--heap-state-memory") {
		t.Fatalf("restoring %d bytes of strings under a bound of %d: %v, want a MemoryError naming --heap-state-memory", keys*size, keys*size/2, me)
	}
}
