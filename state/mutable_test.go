package state_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/state"
)

// inPlace is one of each keyed state kind holding values that user code
// changes in place: maps, slices and pointers.
type inPlace struct {
	value   state.ValueState[map[string]bool]
	ttl     state.ValueState[[]int64]
	ptr     state.ValueState[*[2]int64]
	list    state.ListState[map[string]int]
	mp      state.MapState[string, []int64]
	intMap  state.MapState[int64, map[string]bool]
	reduce  state.ReducingState[map[string]bool]
	aggr    state.AggregatingState[string, int]
	aggrAcc map[string]bool // what the aggregating state's Add last changed
}

func newInPlace(k state.KeyedStore) *inPlace {
	s := &inPlace{}
	s.value = state.GetValueState(k, state.ValueDescriptor[map[string]bool]{Name: "value", Codec: codec.MustFor[map[string]bool]()})
	s.ttl = state.GetValueState(k, state.ValueDescriptor[[]int64]{Name: "ttl", Codec: codec.MustFor[[]int64](),
		TTL: &state.TTLConfig{TTL: 1 << 40, Update: state.OnCreateAndWrite}})
	s.ptr = state.GetValueState(k, state.ValueDescriptor[*[2]int64]{Name: "ptr", Codec: codec.MustFor[*[2]int64]()})
	s.list = state.GetListState(k, state.ListDescriptor[map[string]int]{Name: "list", Codec: codec.MustFor[map[string]int]()})
	s.mp = state.GetMapState(k, state.MapDescriptor[string, []int64]{Name: "map", UserKeyCodec: codec.String(), ValueCodec: codec.MustFor[[]int64]()})
	s.intMap = state.GetMapState(k, state.MapDescriptor[int64, map[string]bool]{Name: "int-map", UserKeyCodec: codec.Int64(), ValueCodec: codec.MustFor[map[string]bool]()})
	s.reduce = state.GetReducingState(k, state.ReducingDescriptor[map[string]bool]{Name: "reduce", Codec: codec.MustFor[map[string]bool](),
		Reduce: func(a, b map[string]bool) map[string]bool { maps.Copy(a, b); return a }})
	s.aggr = state.GetAggregatingState(k, state.AggregatingDescriptor[string, map[string]bool, int]{Name: "aggr", AccCodec: codec.MustFor[map[string]bool](),
		Create: func() map[string]bool { return map[string]bool{} },
		Add:    func(u string, acc map[string]bool) map[string]bool { acc[u] = true; return acc },
		Result: func(acc map[string]bool) int { return len(acc) }})
	return s
}

// add records user u in every state, changing the stored values in place
// (and writing them back, as code that runs on both backends must).
func (s *inPlace) add(u string, n int64) {
	m, ok := s.value.Value()
	if !ok {
		m = map[string]bool{}
	}
	m[u] = true
	s.value.Update(m)
	sl, ok := s.ttl.Value()
	if !ok {
		sl = make([]int64, 1)
	}
	sl[0] += n
	s.ttl.Update(sl)
	p, ok := s.ptr.Value()
	if !ok {
		p = new([2]int64)
	}
	p[0] += n
	s.ptr.Update(p)
	l := s.list.Get()
	if len(l) == 0 {
		l = []map[string]int{{}}
	}
	l[0][u]++
	s.list.Update(l)
	v, ok := s.mp.Get("sum")
	if !ok {
		v = make([]int64, 1)
	}
	v[0] += n
	s.mp.Put("sum", v)
	for _, v := range s.mp.All() {
		v[0] += 0 // a write through All's value: must not reach a snapshot's copy
	}
	im, ok := s.intMap.Get(7)
	if !ok {
		im = map[string]bool{}
	}
	im[u] = true
	s.intMap.Put(7, im)
	s.reduce.Add(map[string]bool{u: true})
	s.aggr.Add(u)
}

// describe is what the states hold for the current key.
func (s *inPlace) describe() string {
	m, _ := s.value.Value()
	sl, _ := s.ttl.Value()
	p, _ := s.ptr.Value()
	l := s.list.Get()
	v, _ := s.mp.Get("sum")
	im, _ := s.intMap.Get(7)
	r, _ := s.reduce.Get()
	a, _ := s.aggr.Get()
	return fmt.Sprintf("value=%v ttl=%v ptr=%d list=%v map=%v int-map=%v reduce=%v aggr=%d",
		slices.Sorted(maps.Keys(m)), sl, p[0], l, v, slices.Sorted(maps.Keys(im)), slices.Sorted(maps.Keys(r)), a)
}

// A snapshot of the hashmap backend holds the state as it was when it was
// taken, although the task then changes, in place, the maps, slices and
// pointers it reads from every kind of keyed state before the snapshot is
// written: the first access after the snapshot began copies the entry.
func TestHeapSnapshotIgnoresChangesInPlace(t *testing.T) {
	cfg := func(dir string) statebackend.Config {
		return statebackend.Config{Kind: statebackend.KindHashMap, Dir: dir, MaxParallelism: 128,
			Range: keygroup.Range{Start: 0, End: 127}, Clock: clock.NewManual(0)}
	}
	k, err := statebackend.New(cfg(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	s := newInPlace(k)
	setKey(k, "site")
	s.add("a", 1)
	s.add("b", 2)
	want := s.describe()
	p, err := k.Snapshot(1, statebackend.Canonical)
	if err != nil {
		t.Fatal(err)
	}
	s.add("c", 4)
	s.add("d", 8)
	after := s.describe()
	var buf bytes.Buffer
	if _, err := p.Materialize(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := statebackend.New(cfg(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if err := k2.Restore([]statebackend.Source{{Canonical: r}}); err != nil {
		t.Fatal(err)
	}
	s2 := newInPlace(k2)
	setKey(k2, "site")
	if got := s2.describe(); got != want {
		t.Fatalf("the snapshot holds\n%s\nwant what the state held when it was taken\n%s", got, want)
	}
	setKey(k, "site")
	if got := s.describe(); got != after || got == want {
		t.Fatalf("the live state holds\n%s\nwant\n%s", got, after)
	}
}
