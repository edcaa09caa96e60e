package statebackend

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

const testMaxPar = 32

var (
	ttlRead  = &state.TTLConfig{TTL: 100 * time.Millisecond, Update: state.OnReadAndWrite}
	ttlWrite = &state.TTLConfig{TTL: 80 * time.Millisecond, Update: state.OnCreateAndWrite}
)

// handles are one subtask's states, the same set on every backend.
type handles struct {
	k   Keyed
	v   state.ValueState[int64]
	vt  state.ValueState[string]
	l   state.ListState[string]
	lt  state.ListState[string]
	lr  state.ListState[string]
	m   state.MapState[string, int64]
	mt  state.MapState[string, int64]
	mi  state.MapState[int64, int64] // integer user keys: a table of their own on the heap backend
	mit state.MapState[int64, int64]
	r   state.ReducingState[int64]
	a   state.AggregatingState[int64, int64]
	at  state.AggregatingState[int64, int64]
}

func avg(ttl *state.TTLConfig, name string) state.AggregatingDescriptor[int64, []int64, int64] {
	return state.AggregatingDescriptor[int64, []int64, int64]{
		Name: name, AccCodec: codec.Slice(codec.Int64()), TTL: ttl,
		Create: func() []int64 { return []int64{0, 0} },
		// Mutates the accumulator in place, as user code may: copy-on-write must cope.
		Add:    func(in int64, acc []int64) []int64 { acc[0] += in; acc[1]++; return acc },
		Result: func(acc []int64) int64 { return acc[0] * 1000 / acc[1] },
	}
}

func openHandles(k Keyed) *handles {
	return &handles{
		k:   k,
		v:   state.GetValueState(k, state.ValueDescriptor[int64]{Name: "v", Codec: codec.Int64()}),
		vt:  state.GetValueState(k, state.ValueDescriptor[string]{Name: "vt", Codec: codec.String(), TTL: ttlRead}),
		l:   state.GetListState(k, state.ListDescriptor[string]{Name: "l", Codec: codec.String()}),
		lt:  state.GetListState(k, state.ListDescriptor[string]{Name: "lt", Codec: codec.String(), TTL: ttlWrite}),
		lr:  state.GetListState(k, state.ListDescriptor[string]{Name: "lr", Codec: codec.String(), TTL: ttlRead}),
		m:   state.GetMapState(k, state.MapDescriptor[string, int64]{Name: "m", UserKeyCodec: codec.String(), ValueCodec: codec.Int64()}),
		mt:  state.GetMapState(k, state.MapDescriptor[string, int64]{Name: "mt", UserKeyCodec: codec.String(), ValueCodec: codec.Int64(), TTL: ttlRead}),
		mi:  state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "mi", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64()}),
		mit: state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "mit", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64(), TTL: ttlWrite}),
		r: state.GetReducingState(k, state.ReducingDescriptor[int64]{Name: "r", Codec: codec.Int64(),
			Reduce: func(a, b int64) int64 { return a + b }}),
		a:  state.GetAggregatingState(k, avg(nil, "a")),
		at: state.GetAggregatingState(k, avg(ttlWrite, "at")),
	}
}

// cluster is one keyed operator at some parallelism: ops are routed to the
// subtask owning the key's key group.
type cluster struct {
	t    testing.TB
	subs []*handles
	rngs []keygroup.Range
	clk  *clock.Manual
}

func newCluster(t testing.TB, clk *clock.Manual, parallelism int, kinds func(i int) string) *cluster {
	c := &cluster{t: t, clk: clk}
	// The subtasks share a heap Memory, as a TaskManager's do, so the heap
	// tables count what their values point to; once all are closed and
	// their snapshots written, it holds nothing.
	mem := budget.New(1 << 40)
	t.Cleanup(func() {
		if n := mem.Used(); n != 0 {
			t.Errorf("after every subtask closed, the heap Memory holds %d bytes", n)
		}
	})
	for i := range parallelism {
		rng := keygroup.RangeFor(i, parallelism, testMaxPar)
		k, err := New(Config{Kind: kinds(i), Dir: t.TempDir(), MaxParallelism: testMaxPar, Range: rng, Clock: clk, HeapMemory: mem,
			// Write-back caches from "write every entry back at once" to "holds everything".
			Pebble: PebbleOptions{CacheBytes: 1 << 20, MemTableBytes: 1 << 20, WriteCacheBytes: []int64{1, 2048, 0}[(i+parallelism)%3]}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		c.subs = append(c.subs, nil)
		c.rngs = append(c.rngs, rng)
		c.subs[i] = &handles{k: k}
	}
	return c
}

func (c *cluster) open() {
	for i, h := range c.subs {
		c.subs[i] = openHandles(h.k)
	}
}

func (c *cluster) at(key, ns string) *handles {
	kb := codec.String().AppendEncode(nil, key)
	kg := keygroup.ForHash(keygroup.HashBytes(kb), testMaxPar)
	h := c.subs[keygroup.OperatorIndex(kg, len(c.subs), testMaxPar)]
	h.k.SetCurrentKey(kb, kg)
	h.k.SetCurrentNamespace([]byte(ns))
	return h
}

func sortedMap(m state.MapState[string, int64]) string {
	var parts []string
	for k, v := range m.All() {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	var keys []string
	for k := range m.Keys() {
		keys = append(keys, k)
	}
	if len(keys) != len(parts) {
		return fmt.Sprintf("Keys() has %d keys, All() %d entries", len(keys), len(parts))
	}
	return strings.Join(parts, ",")
}

func sortedIntMap(m state.MapState[int64, int64]) string {
	var parts []string
	for k, v := range m.All() {
		parts = append(parts, fmt.Sprintf("%d=%d", k, v))
	}
	slices.Sort(parts)
	n := 0
	for range m.Keys() {
		n++
	}
	if n != len(parts) {
		return fmt.Sprintf("Keys() has %d keys, All() %d entries", n, len(parts))
	}
	return strings.Join(parts, ",")
}

func opt[V any](v V, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprint(v)
}

var (
	// testIntKeys are integer user keys the heap backend's table treats
	// specially (0x5bd1e9955bd1e995 is kept beside it) or that collide.
	testIntKeys = []int64{0x5bd1e9955bd1e995, 0, -1, math.MinInt64, 1 << 40, 2 << 40}
	testKeys    = []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	testNS      = []string{"", "w1", "w2"}
)

// step applies one random operation and describes what it observed.
func (c *cluster) step(rnd *rand.Rand) string {
	key, ns := testKeys[rnd.IntN(len(testKeys))], testNS[rnd.IntN(len(testNS))]
	n := rnd.Int64N(100)
	s := strconv.FormatInt(n, 10)
	uk := strconv.FormatInt(n%4, 10) // few user keys, so map entries are revisited before they expire
	ik := n                          // up to 100 keys: the heap's tables grow
	if rnd.IntN(3) == 0 {
		ik = testIntKeys[rnd.IntN(len(testIntKeys))]
	}
	op := rnd.IntN(31)
	if op >= 28 {
		d := rnd.Int64N(30)
		c.clk.Advance(d)
		return fmt.Sprintf("advance %d", d)
	}
	h := c.at(key, ns)
	out := func(format string, args ...any) string {
		return fmt.Sprintf("%s/%s op %d: ", key, ns, op) + fmt.Sprintf(format, args...)
	}
	switch op {
	case 0:
		h.v.Update(n)
		return out("v=%d", n)
	case 1:
		v, ok := h.v.Value()
		if ok {
			h.v.Update(v + 1)
		}
		return out("v %s", opt(v, ok))
	case 2:
		h.v.Clear()
		return out("clear v")
	case 3:
		h.vt.Update(s)
		return out("vt=%s", s)
	case 4:
		return out("vt %s", opt(h.vt.Value()))
	case 5:
		h.l.Add(s)
		return out("l+%s", s)
	case 6:
		return out("l %v", h.l.Get())
	case 7:
		vs := []string{s, s + "x"}[:rnd.IntN(3)%2+rnd.IntN(2)]
		h.l.Update(vs)
		return out("l=%v", vs)
	case 8:
		h.l.Clear()
		h.lt.AddAll([]string{s, "y"})
		h.lr.Add(s)
		return out("clear l, lt+%s,y lr+%s", s, s)
	case 9:
		return out("lt %v lr %v", h.lt.Get(), h.lr.Get())
	case 10:
		h.m.Put(uk, n)
		return out("m[%s]=%d", uk, n)
	case 11:
		return out("m[%s] %s %v", uk, opt(h.m.Get(uk)), h.m.Contains(uk))
	case 12:
		h.m.Remove(uk)
		return out("m remove %s", uk)
	case 13:
		return out("m {%s} empty %v", sortedMap(h.m), h.m.IsEmpty())
	case 14:
		h.m.Clear()
		return out("clear m")
	case 15:
		h.mt.Put(uk, n)
		return out("mt[%s]=%d", uk, n)
	case 16:
		return out("mt[%s] %s", uk, opt(h.mt.Get(uk)))
	case 17:
		return out("mt {%s} empty %v", sortedMap(h.mt), h.mt.IsEmpty())
	case 18:
		h.r.Add(n)
		return out("r+%d: %s", n, opt(h.r.Get()))
	case 19:
		h.a.Add(n)
		return out("a+%d: %s", n, opt(h.a.Get()))
	case 20:
		h.at.Add(n)
		return out("at+%d: %s", n, opt(h.at.Get()))
	case 21:
		return out("at %s", opt(h.at.Get()))
	case 22:
		h.r.Clear()
		h.a.Clear()
		return out("clear r a")
	case 23:
		h.mi.Put(ik, n)
		h.mit.Put(ik%8, n)
		return out("mi[%d]=%d mit[%d]=%d", ik, n, ik%8, n)
	case 24:
		return out("mi[%d] %s %v mit[%d] %s", ik, opt(h.mi.Get(ik)), h.mi.Contains(ik), ik%8, opt(h.mit.Get(ik%8)))
	case 25:
		h.mi.Remove(ik)
		h.mit.Remove(ik % 8)
		return out("mi mit remove %d", ik)
	case 26:
		return out("mi {%s} empty %v mit {%s} empty %v", sortedIntMap(h.mi), h.mi.IsEmpty(), sortedIntMap(h.mit), h.mit.IsEmpty())
	case 27:
		if rnd.IntN(4) == 0 {
			h.mi.Clear()
			return out("clear mi")
		}
		// Remove the even keys in a loop over them.
		for k := range h.mi.Keys() {
			if k%2 == 0 {
				h.mi.Remove(k)
			}
		}
		return out("mi remove even")
	}
	panic("unreachable")
}

// dump reads every state of every key and namespace (reads refresh
// OnReadAndWrite TTLs, identically on every cluster).
func (c *cluster) dump() string {
	var b strings.Builder
	for _, key := range testKeys {
		for _, ns := range testNS {
			h := c.at(key, ns)
			fmt.Fprintf(&b, "%s/%s v=%s vt=%s l=%v lt=%v lr=%v m={%s} mt={%s} mi={%s} mit={%s} r=%s a=%s at=%s\n", key, ns,
				opt(h.v.Value()), opt(h.vt.Value()), h.l.Get(), h.lt.Get(), h.lr.Get(), sortedMap(h.m), sortedMap(h.mt),
				sortedIntMap(h.mi), sortedIntMap(h.mit),
				opt(h.r.Get()), opt(h.a.Get()), opt(h.at.Get()))
		}
	}
	return b.String()
}

// snapshotAll takes canonical snapshots of every subtask, dumps the state as
// of the snapshot, runs during (processing continues while the snapshots
// materialize), and returns the snapshots as restore sources.
func (c *cluster) snapshotAll(id int64, during func()) (srcs []Source, atSnapshot string) {
	var pend []Pending
	for _, h := range c.subs {
		p, err := h.k.Snapshot(id, Canonical)
		if err != nil {
			c.t.Fatal(err)
		}
		pend = append(pend, p)
	}
	atSnapshot = c.dump()
	// Materialize on other goroutines while processing continues (run with -race).
	bufs := make([]bytes.Buffer, len(pend))
	errs := make(chan error, len(pend))
	for i, p := range pend {
		go func() {
			_, err := p.Materialize(&bufs[i])
			errs <- err
		}()
	}
	if during != nil {
		during()
	}
	for range pend {
		if err := <-errs; err != nil {
			c.t.Fatal(err)
		}
	}
	for i := range bufs {
		r, err := snapshot.Open(bytes.NewReader(bufs[i].Bytes()), int64(bufs[i].Len()))
		if err != nil {
			c.t.Fatal(err)
		}
		srcs = append(srcs, Source{Canonical: r})
	}
	return srcs, atSnapshot
}

func kindsAll(kind string) func(int) string { return func(int) string { return kind } }
func kindsMixed(r *rand.Rand) func(int) string {
	return func(int) string { return []string{KindHashMap, KindPebble}[r.IntN(2)] }
}

// TestMetamorphicHeapVsPebble runs the same random operations on the heap
// backend, on Pebble, and on a mixed cluster at another parallelism: every
// observation must be identical.
func TestMetamorphicHeapVsPebble(t *testing.T) {
	s := testseed.New(t)
	steps := 4000
	if testing.Short() {
		steps = 1500
	}
	for run := range 3 {
		clkH, clkP, clkM := clock.NewManual(1_000), clock.NewManual(1_000), clock.NewManual(1_000)
		rnd := rand.New(rand.NewPCG(s, uint64(run)))
		heapC := newCluster(t, clkH, 1, kindsAll(KindHashMap))
		pebC := newCluster(t, clkP, 1, kindsAll(KindPebble))
		mixC := newCluster(t, clkM, 1+rnd.IntN(4), kindsMixed(rnd))
		for _, c := range []*cluster{heapC, pebC, mixC} {
			c.open()
		}
		for i := range steps {
			st := rnd.Uint64()
			want := heapC.step(rand.New(rand.NewPCG(st, 0)))
			if got := pebC.step(rand.New(rand.NewPCG(st, 0))); got != want {
				t.Fatalf("run %d step %d: heap %q, pebble %q", run, i, want, got)
			}
			if got := mixC.step(rand.New(rand.NewPCG(st, 0))); got != want {
				t.Fatalf("run %d step %d: heap %q, mixed cluster of %d %q", run, i, want, len(mixC.subs), got)
			}
		}
		if a, b := heapC.dump(), pebC.dump(); a != b {
			t.Fatalf("run %d: final state differs:\nheap:\n%s\npebble:\n%s", run, a, b)
		}
	}
}

// TestSnapshotRestoreRescale snapshots a cluster of mixed backends (which
// keeps processing while the snapshots materialize), restores it at
// parallelism 1 to 4 on heap, Pebble and mixed backends, each new subtask
// reading all old snapshots, and checks that every key's state is as at the
// snapshot and that the restored cluster then behaves like the original.
func TestSnapshotRestoreRescale(t *testing.T) {
	s := testseed.New(t)
	for run := range 3 {
		rnd := rand.New(rand.NewPCG(s, uint64(run)+100))
		clk := clock.NewManual(5_000)
		orig := newCluster(t, clk, 1+rnd.IntN(4), kindsMixed(rnd))
		orig.open()
		for range 2500 {
			orig.step(rnd)
		}
		snapTime := clk.NowMillis()
		var after []uint64
		var afterOut []string
		srcs, atSnap := orig.snapshotAll(7, func() {
			for range 400 {
				st := rnd.Uint64()
				after = append(after, st)
				afterOut = append(afterOut, orig.step(rand.New(rand.NewPCG(st, 0))))
			}
		})
		for p := 1; p <= 4; p++ {
			for ki, kinds := range []func(int) string{kindsAll(KindHashMap), kindsAll(KindPebble), kindsMixed(rnd)} {
				c := newCluster(t, clock.NewManual(snapTime), p, kinds)
				for _, h := range c.subs {
					if err := h.k.Restore(srcs); err != nil {
						t.Fatal(err)
					}
				}
				c.open()
				if d := c.dump(); d != atSnap {
					t.Fatalf("run %d: restored at parallelism %d (kinds %d) differs:\nat snapshot:\n%s\nrestored:\n%s", run, p, ki, atSnap, d)
				}
				for i, st := range after {
					if got := c.step(rand.New(rand.NewPCG(st, 0))); got != afterOut[i] {
						t.Fatalf("run %d: restored at parallelism %d (kinds %d), step %d after restore: %q, original %q", run, p, ki, i, got, afterOut[i])
					}
				}
			}
		}
	}
}

// TestMapWritesWhileIterating removes and updates entries of a map state
// from inside the loop over its entries, with the map larger than Pebble's
// 1 MiB memtable here, on both backends: every entry is visited once, and the
// writes all land.
func TestMapWritesWhileIterating(t *testing.T) {
	const n = 60_000
	for _, kind := range []string{KindHashMap, KindPebble} {
		t.Run(kind, func(t *testing.T) {
			c := newCluster(t, clock.NewManual(0), 1, kindsAll(kind))
			c.open()
			h := c.at("k", "")
			for i := range int64(n) {
				h.m.Put(strconv.FormatInt(i, 10), i)
			}
			seen := map[string]bool{}
			for k, v := range h.m.All() {
				if seen[k] {
					t.Fatalf("entry %s visited twice", k)
				}
				seen[k] = true
				if v%2 == 0 {
					h.m.Remove(k)
				} else {
					h.m.Put(k, -v)
				}
			}
			if len(seen) != n {
				t.Fatalf("visited %d entries, want %d", len(seen), n)
			}
			left := 0
			for k, v := range h.m.All() {
				i, _ := strconv.ParseInt(k, 10, 64)
				if i%2 == 0 || v != -i {
					t.Fatalf("after the loop: %s=%d", k, v)
				}
				left++
			}
			if left != n/2 {
				t.Fatalf("%d entries left, want %d", left, n/2)
			}
		})
	}
}
