package state_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/state"
)

// intTestKeys are user keys an integer map state treats specially or that
// are likely to collide: the key kept beside the table, the extremes, and
// multiples of large powers of two.
var intTestKeys = []int64{state.IntMapSpecialKey, 0, -1, 1, math.MinInt64, math.MaxInt64, 1 << 32, 2 << 32, 3 << 32, 1 << 62, -1 << 62}

// TestIntMapStateAgainstGoMap runs random puts, gets, removes, clears and
// loops on a MapState[int64, int64] of several keys, on both backends, and
// checks every answer against a Go map: dense runs of keys (as Nexmark's
// ids), sparse ones, and the keys of intTestKeys, enough of them to grow
// the tables and to empty them again.
func TestIntMapStateAgainstGoMap(t *testing.T) {
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		m := state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64()})
		keys := []string{"a", "b", "c"}
		ref := map[string]map[int64]int64{}
		rnd := rand.New(rand.NewPCG(1, 2))
		steps := 200_000
		if testing.Short() {
			steps = 40_000
		}
		for step := range steps {
			key := keys[rnd.IntN(len(keys))]
			setKey(k, key)
			r := ref[key]
			if r == nil {
				r = map[int64]int64{}
				ref[key] = r
			}
			var uk int64
			switch rnd.IntN(3) {
			case 0:
				uk = rnd.Int64N(3000) // dense
			case 1:
				uk = rnd.Int64() // sparse
			default:
				uk = intTestKeys[rnd.IntN(len(intTestKeys))]
			}
			switch op := rnd.IntN(100); {
			case op < 45:
				v := rnd.Int64()
				m.Put(uk, v)
				r[uk] = v
			case op < 80:
				v, ok := m.Get(uk)
				if rv, rok := r[uk]; v != rv || ok != rok || m.Contains(uk) != rok {
					t.Fatalf("step %d: %s[%d] = %d %v, want %d %v", step, key, uk, v, ok, rv, rok)
				}
			case op < 98:
				// Remove most of the keys now and then, so tables empty.
				if rnd.IntN(200) == 0 {
					for _, rk := range slices.Collect(maps.Keys(r)) {
						if rnd.IntN(10) != 0 {
							m.Remove(rk)
							delete(r, rk)
						}
					}
				}
				m.Remove(uk)
				delete(r, uk)
			case op < 99:
				got := maps.Collect(m.All())
				if !maps.Equal(got, r) {
					t.Fatalf("step %d: %s All() has %d entries, want %d", step, key, len(got), len(r))
				}
				n := 0
				for uk := range m.Keys() {
					if _, ok := r[uk]; !ok {
						t.Fatalf("step %d: %s Keys() has %d, not in the map", step, key, uk)
					}
					n++
				}
				if n != len(r) || m.IsEmpty() != (len(r) == 0) {
					t.Fatalf("step %d: %s Keys() has %d keys, IsEmpty %v; want %d", step, key, n, m.IsEmpty(), len(r))
				}
			default:
				m.Clear()
				clear(r)
			}
		}
	})
}

// TestIntMapStateLoopReadsItsStart writes to an integer map state from
// inside a loop over it, on both backends: the loop yields the entries
// and values as they were when it started (as Pebble's scan does), once
// each, although the writes grow the table, remove keys it has not reached
// and update values; and the writes all land.
func TestIntMapStateLoopReadsItsStart(t *testing.T) {
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		m := state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64()})
		setKey(k, "k")
		want := map[int64]int64{}
		for i := range int64(1000) {
			m.Put(i, i)
			want[i] = i
		}
		m.Put(state.IntMapSpecialKey, 7)
		want[state.IntMapSpecialKey] = 7
		after := maps.Clone(want)
		got := map[int64]int64{}
		for uk, v := range m.All() {
			if _, ok := got[uk]; ok {
				t.Fatalf("%d yielded twice", uk)
			}
			got[uk] = v
			// Remove a key the loop may not have reached, update this
			// one, and add new ones (which grow the table).
			other := (uk*7919 + 13) % 1000
			m.Remove(other)
			delete(after, other)
			m.Put(uk, -v)
			after[uk] = -v
			m.Put(10_000+uk, 1)
			after[10_000+uk] = 1
		}
		if !maps.Equal(got, want) {
			t.Fatalf("the loop yielded %d entries, not the %d at its start", len(got), len(want))
		}
		if now := maps.Collect(m.All()); !maps.Equal(now, after) {
			t.Fatalf("after the loop: %d entries, want %d", len(now), len(after))
		}
		// A loop left early and nested loops: writes still land.
		for range m.Keys() {
			for range m.Keys() {
				break
			}
			break
		}
		m.Put(-5, 5)
		if v, _ := m.Get(-5); v != 5 {
			t.Fatal("put after loops left early")
		}
	})
}

// TestIntMapStateKeyKinds checks the other 64-bit integer key kinds: a
// named type, uint64 (with keys above MaxInt64) and int.
func TestIntMapStateKeyKinds(t *testing.T) {
	type id int64
	backends(t, clock.NewManual(0), func(t *testing.T, k statebackend.Keyed) {
		mi := state.GetMapState(k, state.MapDescriptor[id, string]{Name: "id", UserKeyCodec: codec.Codec[id](codecOf[id]()), ValueCodec: codec.String()})
		mu := state.GetMapState(k, state.MapDescriptor[uint64, int]{Name: "u", UserKeyCodec: codec.Uint64(), ValueCodec: codecOf[int]()})
		mn := state.GetMapState(k, state.MapDescriptor[int, uint64]{Name: "n", UserKeyCodec: codecOf[int](), ValueCodec: codec.Uint64()})
		setKey(k, "k")
		for i := range 100 {
			mi.Put(id(-i), fmt.Sprint(i))
			mu.Put(math.MaxUint64-uint64(i), i)
			mn.Put(i<<40, uint64(i))
		}
		for i := range 100 {
			if v, _ := mi.Get(id(-i)); v != fmt.Sprint(i) {
				t.Fatalf("id %d: %q", -i, v)
			}
			if v, _ := mu.Get(math.MaxUint64 - uint64(i)); v != i {
				t.Fatalf("uint64: %d", v)
			}
			if v, _ := mn.Get(i << 40); v != uint64(i) {
				t.Fatalf("int: %d", v)
			}
		}
		for u := range mu.Keys() {
			if u < math.MaxUint64-99 {
				t.Fatalf("uint64 key %d", u)
			}
		}
	})
}

func codecOf[T any]() codec.Codec[T] {
	c, err := codec.For[T]()
	if err != nil {
		panic(err)
	}
	return c
}

// TestIntMapStateTTL checks that entries of an integer map state with TTL
// expire one by one, reads refresh them with OnReadAndWrite, and loops
// drop the expired ones, the key beside the table included.
func TestIntMapStateTTL(t *testing.T) {
	clk := clock.NewManual(1000)
	backends(t, clk, func(t *testing.T, k statebackend.Keyed) {
		clk.Set(1000)
		onRead := &state.TTLConfig{TTL: 100 * time.Millisecond, Update: state.OnReadAndWrite}
		m := state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64(), TTL: onRead})
		setKey(k, "k")
		for i := range int64(50) {
			m.Put(i, i)
		}
		m.Put(state.IntMapSpecialKey, 1)
		clk.Set(1050)
		for i := int64(0); i < 50; i += 2 {
			m.Get(i) // refreshed
		}
		m.Get(state.IntMapSpecialKey)
		clk.Set(1120)
		var got []int64
		for uk := range m.Keys() { // refreshes the survivors to 1120
			got = append(got, uk)
		}
		slices.Sort(got)
		if len(got) != 26 || got[0] != 0 || got[24] != 48 || got[25] != state.IntMapSpecialKey {
			t.Fatalf("live after 120 ms: %v", got)
		}
		if _, ok := m.Get(1); ok {
			t.Fatal("1 alive after 120 ms")
		}
		clk.Set(1219)
		if m.IsEmpty() {
			t.Fatal("empty 99 ms after the loop read it")
		}
		clk.Set(1220)
		if !m.IsEmpty() {
			t.Fatal("alive 100 ms after the loop read it")
		}
	})
}

// TestHeapIntMapUpdateDoesNotAllocate: reading and updating an existing
// entry of an integer map state, as Nexmark's q16 does per bid.
func TestHeapIntMapUpdateDoesNotAllocate(t *testing.T) {
	k, _ := statebackend.New(statebackend.Config{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 127}, Clock: clock.NewManual(0)})
	m := state.GetMapState(k, state.MapDescriptor[int64, uint64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Uint64()})
	keys := make([][]byte, 10)
	kgs := make([]int, 10)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint(i))
		kgs[i] = keygroup.ForHash(keygroup.HashBytes(keys[i]), 128)
		k.SetCurrentKey(keys[i], kgs[i])
		for j := range int64(1000) {
			m.Put(j, 0)
		}
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		k.SetCurrentKey(keys[i%10], kgs[i%10])
		v, _ := m.Get(int64(i % 1000))
		m.Put(int64(i%1000), v+1)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per read-modify-write", allocs)
	}
}
