package state_test

import (
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/state"
)

func backends(t *testing.T, clk clock.Clock, fn func(t *testing.T, k statebackend.Keyed)) {
	for _, kind := range []string{statebackend.KindHashMap, statebackend.KindPebble} {
		t.Run(kind, func(t *testing.T) {
			k, err := statebackend.New(statebackend.Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: 128,
				Range: keygroup.Range{Start: 0, End: 127}, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			fn(t, k)
		})
	}
}

func setKey(k statebackend.Keyed, key string) {
	b := []byte(key)
	k.SetCurrentKey(b, keygroup.ForHash(keygroup.HashBytes(b), 128))
}

func mustPanic(t *testing.T, contains string, fn func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), contains) {
			t.Fatalf("panic %v, want one containing %q", r, contains)
		}
	}()
	fn()
}

func TestRegistry(t *testing.T) {
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		d := state.ValueDescriptor[int64]{Name: "count", Codec: codec.Int64()}
		a, b := state.GetValueState(k, d), state.GetValueState(k, d)
		if a != b {
			t.Fatal("the same name gave two handles")
		}
		mustPanic(t, `state "count" is registered as value state`, func() {
			state.GetListState(k, state.ListDescriptor[int64]{Name: "count", Codec: codec.Int64()})
		})
		mustPanic(t, `state "count" is registered as`, func() {
			state.GetValueState(k, state.ValueDescriptor[string]{Name: "count", Codec: codec.String()})
		})
		mustPanic(t, `state "ch": the descriptor's Codec is nil and codec.For cannot derive one for chan int`, func() {
			state.GetValueState(k, state.ValueDescriptor[chan int]{Name: "ch"})
		})
		mustPanic(t, "no current key", func() { a.Value() })
	})
}

func TestKeysAndNamespacesAreSeparate(t *testing.T) {
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		v := state.GetValueState(k, state.ValueDescriptor[string]{Name: "v", Codec: codec.String()})
		m := state.GetMapState(k, state.MapDescriptor[string, string]{Name: "m", UserKeyCodec: codec.String(), ValueCodec: codec.String()})
		// Keys that are prefixes of each other, and a key/namespace split that
		// concatenates to the same bytes, must not collide.
		cases := [][2]string{{"ab", ""}, {"a", "b"}, {"a", ""}, {"", "ab"}, {"abc", ""}}
		for _, c := range cases {
			setKey(k, c[0])
			k.SetCurrentNamespace([]byte(c[1]))
			v.Update(c[0] + "|" + c[1])
			m.Put("", c[0])
			m.Put("x", c[1])
		}
		for _, c := range cases {
			setKey(k, c[0])
			k.SetCurrentNamespace([]byte(c[1]))
			if got, _ := v.Value(); got != c[0]+"|"+c[1] {
				t.Fatalf("key %q ns %q: %q", c[0], c[1], got)
			}
			n := 0
			for range m.All() {
				n++
			}
			if got, _ := m.Get(""); got != c[0] || n != 2 {
				t.Fatalf("key %q ns %q: map %q with %d entries", c[0], c[1], got, n)
			}
		}
	})
}

// TestTTL checks the exact expiry instant of each state kind and both
// update modes, driving time with a manual clock.
func TestTTL(t *testing.T) {
	clk := clock.NewManual(1000)
	backends(t, clk, func(t *testing.T, k statebackend.Keyed) {
		clk.Set(1000)
		onWrite := &state.TTLConfig{TTL: 100 * time.Millisecond, Update: state.OnCreateAndWrite}
		onRead := &state.TTLConfig{TTL: 100 * time.Millisecond, Update: state.OnReadAndWrite}
		v := state.GetValueState(k, state.ValueDescriptor[int64]{Name: "v", Codec: codec.Int64(), TTL: onWrite})
		vr := state.GetValueState(k, state.ValueDescriptor[int64]{Name: "vr", Codec: codec.Int64(), TTL: onRead})
		l := state.GetListState(k, state.ListDescriptor[int64]{Name: "l", Codec: codec.Int64(), TTL: onWrite})
		m := state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64(), TTL: onWrite})
		r := state.GetReducingState(k, state.ReducingDescriptor[int64]{Name: "r", Codec: codec.Int64(), TTL: onWrite,
			Reduce: func(a, b int64) int64 { return a + b }})
		setKey(k, "key")
		v.Update(1)
		vr.Update(1)
		l.Add(1)
		m.Put(1, 1)
		r.Add(5)
		clk.Set(1050)
		l.Add(2)
		m.Put(2, 2)
		if _, ok := vr.Value(); !ok { // refreshes vr to 1050
			t.Fatal("vr expired early")
		}
		clk.Set(1099)
		if _, ok := v.Value(); !ok {
			t.Fatal("v expired at 99 ms")
		}
		clk.Set(1100)
		if _, ok := v.Value(); ok {
			t.Fatal("v alive at 100 ms")
		}
		if _, ok := vr.Value(); !ok {
			t.Fatal("vr expired although read at 1050")
		}
		if got := l.Get(); len(got) != 1 || got[0] != 2 {
			t.Fatalf("list at 1100: %v (elements expire one by one)", got)
		}
		if _, ok := m.Get(1); ok || !m.Contains(2) || m.IsEmpty() {
			t.Fatal("map entry 1 should expire alone")
		}
		if _, ok := r.Get(); ok {
			t.Fatal("reducing state alive at 100 ms")
		}
		r.Add(7) // starts afresh: the expired 5 is gone
		if got, _ := r.Get(); got != 7 {
			t.Fatalf("reduce after expiry = %d", got)
		}
		clk.Set(1150)
		if l.Get() != nil || !m.IsEmpty() {
			t.Fatal("list or map alive at 1150")
		}
		clk.Set(1200)
		if _, ok := vr.Value(); ok {
			t.Fatal("vr alive 100 ms after its last read (at 1100)")
		}
	})
}

func TestListAndMapSemantics(t *testing.T) {
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		l := state.GetListState(k, state.ListDescriptor[string]{Name: "l", Codec: codec.String()})
		m := state.GetMapState(k, state.MapDescriptor[string, int64]{Name: "m", UserKeyCodec: codec.String(), ValueCodec: codec.Int64()})
		a := state.GetAggregatingState(k, state.AggregatingDescriptor[int64, int64, string]{Name: "a", AccCodec: codec.Int64(),
			Create: func() int64 { return 100 }, Add: func(in, acc int64) int64 { return acc + in },
			Result: func(acc int64) string { return fmt.Sprint("sum ", acc) }})
		setKey(k, "k")
		if l.Get() != nil || !m.IsEmpty() {
			t.Fatal("not empty at start")
		}
		l.AddAll([]string{"a", "b"})
		l.Add("")
		if got := l.Get(); fmt.Sprint(got) != "[a b ]" || len(got) != 3 {
			t.Fatalf("list %q", got)
		}
		l.Update(nil)
		if l.Get() != nil {
			t.Fatal("Update(nil) should clear")
		}
		m.Put("x", 1)
		m.Put("y", 2)
		m.Put("x", 3)
		m.Remove("y")
		m.Remove("zz")
		if got, ok := m.Get("x"); !ok || got != 3 || m.Contains("y") {
			t.Fatal("map put/remove")
		}
		for key := range m.Keys() {
			m.Remove(key) // removing while iterating is allowed
		}
		if !m.IsEmpty() {
			t.Fatal("map not empty after removing all keys")
		}
		if _, ok := a.Get(); ok {
			t.Fatal("aggregate present before Add")
		}
		a.Add(1)
		a.Add(2)
		if got, _ := a.Get(); got != "sum 103" {
			t.Fatalf("aggregate %q", got)
		}
	})
}

func TestHeapUpdateOfExistingKeyDoesNotAllocate(t *testing.T) {
	k, _ := statebackend.New(statebackend.Config{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 127}, Clock: clock.NewManual(0)})
	v := state.GetValueState(k, state.ValueDescriptor[int64]{Name: "v", Codec: codec.Int64()})
	keys := make([][]byte, 100)
	kgs := make([]int, 100)
	for i := range keys {
		keys[i] = codec.Int64().AppendEncode(nil, int64(i))
		kgs[i] = keygroup.ForHash(keygroup.HashBytes(keys[i]), 128)
		k.SetCurrentKey(keys[i], kgs[i])
		v.Update(0)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		k.SetCurrentKey(keys[i%100], kgs[i%100])
		n, _ := v.Value()
		v.Update(n + 1)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per read-modify-write", allocs)
	}
}

// failingTable is a spi.KVTable whose I/O fails.
type failingTable struct{ spi.KVTable }

var errDisk = errors.New("disk on fire")

func (failingTable) Get([]byte) ([]byte, int64, bool, error) { return nil, 0, false, errDisk }

// failingBackend is a serialized backend (spi.Serialized) of one
// failingTable: a backend that package state does not know.
type failingBackend struct{}

func (failingBackend) Now() int64         { return 0 }
func (failingBackend) Table() spi.KVTable { return failingTable{} }

type failingStore struct{ state.StoreBase }

// tablelessStore hands out a backend that offers no table capability.
type tablelessStore struct{ state.StoreBase }

type tableless struct{}

func (tableless) Now() int64 { return 0 }

func (tablelessStore) KeyedState(meta snapshot.StateMeta, _ snapshot.Evolve, create func(spi.Backend) (any, error)) any {
	h, err := create(tableless{})
	if err != nil {
		panic(&state.BackendError{State: meta.Name, Op: "register", Err: err})
	}
	return h
}

// A backend whose spi.Backend offers neither the heap's typed tables nor
// spi.Serialized fails the state's creation with an error naming it, for
// every state kind.
func TestBackendWithoutTableCapabilityFails(t *testing.T) {
	kinds := map[string]func(){
		"value": func() { state.GetValueState(tablelessStore{}, state.ValueDescriptor[int64]{Name: "v"}) },
		"list":  func() { state.GetListState(tablelessStore{}, state.ListDescriptor[int64]{Name: "l"}) },
		"map":   func() { state.GetMapState(tablelessStore{}, state.MapDescriptor[int64, int64]{Name: "m"}) },
		"reduce": func() {
			state.GetReducingState(tablelessStore{}, state.ReducingDescriptor[int64]{Name: "r", Reduce: func(a, b int64) int64 { return a + b }})
		},
	}
	for kind, f := range kinds {
		func() {
			defer func() {
				be, ok := recover().(*state.BackendError)
				if !ok || !strings.Contains(be.Error(), "state_test.tableless") || !strings.Contains(be.Error(), "spi.Serialized") {
					t.Fatalf("%s state on a backend without tables: panic %v, want a *state.BackendError naming the backend and spi.Serialized", kind, be)
				}
			}()
			f()
		}()
	}
}

func (failingStore) KeyedState(meta snapshot.StateMeta, _ snapshot.Evolve, create func(spi.Backend) (any, error)) any {
	h, _ := create(failingBackend{})
	return h
}

func TestBackendErrorPanicsWithTypedValue(t *testing.T) {
	v := state.GetValueState(failingStore{}, state.ValueDescriptor[int64]{Name: "v", Codec: codec.Int64()})
	defer func() {
		be, ok := recover().(*state.BackendError)
		if !ok || !errors.Is(be, errDisk) || be.State != "v" || be.Op != "get" {
			t.Fatalf("recovered %v", be)
		}
	}()
	v.Value()
}

// A nil codec is the one codec.For derives, on every backend; Validate
// names a nil codec that cannot be derived, and the field to set.
func TestNilCodecDefaultsToDerived(t *testing.T) {
	type point struct{ X, Y int64 }
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		v := state.GetValueState(k, state.ValueDescriptor[point]{Name: "v"})
		m := state.GetMapState(k, state.MapDescriptor[string, []int64]{Name: "m"})
		a := state.GetAggregatingState(k, state.AggregatingDescriptor[int64, point, int64]{Name: "a",
			Create: func() point { return point{} }, Add: func(in int64, acc point) point { return point{acc.X + in, acc.Y + 1} },
			Result: func(acc point) int64 { return acc.X * 10 / acc.Y }})
		setKey(k, "k")
		v.Update(point{1, 2})
		m.Put("a", []int64{3, 4})
		a.Add(4)
		a.Add(6)
		got, _ := v.Value()
		ms, _ := m.Get("a")
		avg, _ := a.Get()
		if got != (point{1, 2}) || fmt.Sprint(ms) != "[3 4]" || avg != 50 {
			t.Fatalf("got %v %v %d", got, ms, avg)
		}
	})
	if err := (state.ValueDescriptor[point]{Name: "v"}).Validate(); err != nil {
		t.Errorf("Validate of a derivable nil codec: %v", err)
	}
	err := (state.MapDescriptor[string, func()]{Name: "fns"}).Validate()
	if err == nil || !strings.Contains(err.Error(), `state "fns": the descriptor's ValueCodec is nil`) || !strings.Contains(err.Error(), "set ValueCodec to a codec.Codec[func()]") {
		t.Errorf("Validate: %v", err)
	}
}
