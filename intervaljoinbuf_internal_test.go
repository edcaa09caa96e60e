package weir

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

const joinBufMaxPar = 8

func joinBufBackend(t *testing.T, kind string, rng keygroup.Range) statebackend.Keyed {
	t.Helper()
	k, err := statebackend.New(statebackend.Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: joinBufMaxPar, Range: rng, Clock: clock.NewManual(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// joinBufKey sets key (as 8 bytes) current, in key group key mod maxPar.
func joinBufKey(k statebackend.Keyed, key int64) {
	k.SetCurrentKey(binary.BigEndian.AppendUint64(nil, uint64(key)), int(key%joinBufMaxPar))
}

func joinBufSnapshot(t *testing.T, k statebackend.Keyed) *snapshot.Reader {
	t.Helper()
	p, err := k.Snapshot(1, statebackend.Canonical)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := p.Materialize(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The heap backend's join buffer snapshots as the MapState[int64, []T] the
// Pebble backend uses (same name, kind, codec identity and entries), both
// ways and across a rescale from 1 to 2 subtasks, and removeDue and add
// remove exactly the due prefix. Checked against a plain map of what was added.
func TestHeapJoinSideIsItsMapState(t *testing.T) {
	rng := testseed.Rand(t, 12)
	full := keygroup.Range{Start: 0, End: joinBufMaxPar - 1}
	halves := []keygroup.Range{{Start: 0, End: 3}, {Start: 4, End: joinBufMaxPar - 1}}
	desc := state.MapDescriptor[int64, []int64]{Name: "interval-join-left", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(codec.Int64())}
	const keep = 5

	// want: key -> ts -> values in arrival order.
	want := map[int64]map[int64][]int64{}
	heapK := joinBufBackend(t, statebackend.KindHashMap, full)
	side, err := newHeapJoinSide(heapStoreOf(heapK), desc.Name, codec.Int64())
	if err != nil {
		t.Fatal(err)
	}
	keys := 1 + rng.Int64N(40)
	for i := range 2000 {
		key := rng.Int64N(keys)
		joinBufKey(heapK, key)
		if rng.IntN(20) == 0 {
			// A timer: remove what is due by then, check what is left.
			at := rng.Int64N(300)
			next, ok := side.removeDue(at, keep)
			wantNext := int64(-1)
			for ts := range want[key] {
				if ts+keep <= at {
					delete(want[key], ts)
				} else if wantNext < 0 || ts+keep < wantNext {
					wantNext = ts + keep
				}
			}
			if ok != (wantNext >= 0) || (ok && next != wantNext) {
				t.Fatalf("removeDue(%d) of key %d: %d %v, want %d", at, key, next, ok, wantNext)
			}
			continue
		}
		ts := rng.Int64N(300) // out of order on purpose
		v := int64(i)
		// add drops what is due before the watermark (here random, so
		// that buffers keep elements of every age).
		wm := int64(math.MinInt64)
		if rng.IntN(4) == 0 {
			wm = rng.Int64N(300)
			for ts := range want[key] {
				if ts+keep < wm {
					delete(want[key], ts)
				}
			}
		}
		existed := side.add(ts, v, keep, wm)
		if existed != (len(want[key][ts]) > 0) {
			t.Fatalf("add(%d) of key %d: existed %v, want %v", ts, key, existed, !existed)
		}
		if want[key] == nil {
			want[key] = map[int64][]int64{}
		}
		want[key][ts] = append(want[key][ts], v)
		es := side.elems()
		if !slices.IsSortedFunc(es, func(a, b joinElem[int64]) int { return int(a.ts - b.ts) }) {
			t.Fatalf("buffer of key %d not sorted: %v", key, es)
		}
	}
	show := func(m map[int64][]int64) string {
		var out []string
		for ts, vs := range m {
			out = append(out, fmt.Sprint(ts, vs))
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	fromHeap := func(k statebackend.Keyed, s *heapJoinSide[int64], key int64) string {
		joinBufKey(k, key)
		m := map[int64][]int64{}
		for _, e := range s.elems() {
			m[e.ts] = append(m[e.ts], e.v)
		}
		return show(m)
	}
	fromMap := func(k statebackend.Keyed, ms state.MapState[int64, []int64], key int64) string {
		joinBufKey(k, key)
		m := map[int64][]int64{}
		for ts, vs := range ms.All() {
			m[ts] = vs
		}
		return show(m)
	}

	// Heap -> Pebble at 2 subtasks.
	snap := joinBufSnapshot(t, heapK)
	var pebbles []statebackend.Keyed
	var maps []state.MapState[int64, []int64]
	for _, r := range halves {
		k := joinBufBackend(t, statebackend.KindPebble, r)
		if err := k.Restore([]statebackend.Source{{Canonical: snap}}); err != nil {
			t.Fatal(err)
		}
		pebbles, maps = append(pebbles, k), append(maps, state.GetMapState(k, desc))
	}
	for key := range keys {
		i := 0
		if !halves[0].Contains(int(key % joinBufMaxPar)) {
			i = 1
		}
		if got, w := fromMap(pebbles[i], maps[i], key), show(want[key]); got != w {
			t.Fatalf("key %d restored on Pebble: %s, want %s", key, got, w)
		}
	}

	// Pebble (2 subtasks) -> heap at 1: the heap side restores the MapState.
	heap2 := joinBufBackend(t, statebackend.KindHashMap, full)
	var srcs []statebackend.Source
	for _, k := range pebbles {
		srcs = append(srcs, statebackend.Source{Canonical: joinBufSnapshot(t, k)})
	}
	if err := heap2.Restore(srcs); err != nil {
		t.Fatal(err)
	}
	side2, err := newHeapJoinSide(heapStoreOf(heap2), desc.Name, codec.Int64())
	if err != nil {
		t.Fatal(err)
	}
	for key := range keys {
		if got, w := fromHeap(heap2, side2, key), show(want[key]); got != w {
			t.Fatalf("key %d back on the heap: %s, want %s", key, got, w)
		}
		if es := side2.elems(); !slices.IsSortedFunc(es, func(a, b joinElem[int64]) int { return int(a.ts - b.ts) }) {
			t.Fatalf("restored buffer of key %d not sorted: %v", key, es)
		}
	}
}
