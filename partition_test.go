package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/tuple"
)

// tagged is an element with the subtask that saw it downstream.
type tagged struct {
	V       int64
	Subtask int
}

// tagSubtask records which subtask of a parallel operator receives each element.
func tagSubtask(s weir.DataStream[int64], p int) weir.DataStream[tagged] {
	return weir.Process(s, weir.ProcessFunc[int64, tagged](func(ctx weir.Context, v int64, out weir.Collector[tagged]) error {
		out.Collect(tagged{V: v, Subtask: ctx.Subtask()})
		return nil
	})).SetParallelism(p).Name("Tag")
}

func run[T any](t *testing.T, env *weir.Environment, s weir.DataStream[T]) []T {
	t.Helper()
	out, err := weir.ExecuteAndCollect(context.Background(), env, s, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKeyByRoutesEveryKeyToItsKeyGroupOwner(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	for range 4 {
		up, down := 1+rng.IntN(4), 1+rng.IntN(4)
		maxP := []int{0, 128, 16, 1000}[rng.IntN(4)]
		t.Run(fmt.Sprintf("%d->%d/maxP=%d", up, down, maxP), func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: up, MaxParallelism: maxP})
			if maxP == 0 {
				maxP = keygroup.DefaultMaxParallelismFor(max(up, down))
			}
			n := 5000 + rng.Int64N(5000)
			src := weir.Generate(env, n, 0, func(i int64) int64 { return i*7919%2000 - 1000 })
			keyed := weir.KeyBy(src, func(v int64) int64 { return v })
			out := run(t, env, tagSubtask(keyed.DataStream, down))
			if int64(len(out)) != n {
				t.Fatalf("%d elements arrived, want %d", len(out), n)
			}
			for _, e := range out {
				kg := keygroup.ForHash(keygroup.HashInt64(e.V), maxP)
				if want := keygroup.OperatorIndex(kg, down, maxP); e.Subtask != want {
					t.Fatalf("key %d (key group %d) went to subtask %d, want %d", e.V, kg, e.Subtask, want)
				}
			}
		})
	}
}

func TestRebalanceSpreadsEvenly(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	out := run(t, env, tagSubtask(weir.Sequence(env, 1, 10_000).Rebalance(), 4))
	counts := make([]int, 4)
	for _, e := range out {
		counts[e.Subtask]++
	}
	for i, c := range counts {
		if c != 2500 {
			t.Fatalf("subtask %d got %d elements, want 2500 (counts %v)", i, c, counts)
		}
	}
}

func TestBroadcastReachesEverySubtask(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	out := run(t, env, tagSubtask(weir.Sequence(env, 1, 1000).Broadcast(), 3))
	seen := map[tagged]int{}
	for _, e := range out {
		seen[e]++
	}
	if len(out) != 3000 || len(seen) != 3000 {
		t.Fatalf("%d elements (%d distinct), want each of 1000 once on each of 3 subtasks", len(out), len(seen))
	}
}

func TestShuffleStaysInRangeAndSpreads(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	out := run(t, env, tagSubtask(weir.Sequence(env, 1, 40_000).Shuffle(), 4))
	counts := make([]int, 4)
	for _, e := range out {
		counts[e.Subtask]++
	}
	for i, c := range counts {
		if c < 9000 || c > 11000 {
			t.Fatalf("subtask %d got %d of 40000 elements; a uniform shuffle gives about 10000 (counts %v)", i, c, counts)
		}
	}
}

func TestRescaleStaysLocal(t *testing.T) {
	// 2 producers -> 4 consumers: producer 0 feeds consumers 0,1; producer 1 feeds 2,3.
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src := weir.Process(weir.Sequence(env, 1, 8000), weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
		out.Collect(int64(ctx.Subtask())*1_000_000 + v)
		return nil
	}))
	out := run(t, env, tagSubtask(src.Rescale(), 4))
	counts := make([]int, 4)
	for _, e := range out {
		producer := int(e.V / 1_000_000)
		if e.Subtask/2 != producer {
			t.Fatalf("producer %d sent to consumer %d", producer, e.Subtask)
		}
		counts[e.Subtask]++
	}
	if slices.Contains(counts, 0) {
		t.Fatalf("a consumer got nothing: %v", counts)
	}
}

func TestPartitionCustom(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	s := weir.PartitionCustom(weir.Sequence(env, 1, 999), func(k int64, n int) int { return int(k) % n }, func(v int64) int64 { return v % 10 })
	for _, e := range run(t, env, tagSubtask(s, 3)) {
		if e.Subtask != int(e.V%10)%3 {
			t.Fatalf("%d went to %d", e.V, e.Subtask)
		}
	}
	env = weir.NewEnvironment(weir.Config{Parallelism: 1})
	bad := weir.PartitionCustom(weir.Sequence(env, 1, 10), func(k int64, n int) int { return n }, func(v int64) int64 { return v })
	weir.Discard(tagSubtask(bad, 2))
	if _, err := env.Execute(context.Background(), "bad-partitioner"); err == nil {
		t.Fatal("a partitioner returning an out-of-range partition must fail the job")
	}
}

func TestUnionFilterFlatMapChainingIndependent(t *testing.T) {
	build := func(disable bool) []int64 {
		env := weir.NewEnvironment(weir.Config{Parallelism: 3})
		a := weir.Sequence(env, 1, 3000)
		b := weir.Map(weir.Sequence(env, 1, 2000), func(v int64) int64 { return -v })
		u := weir.Union(a, b)
		f := weir.Filter(u, func(v int64) bool { return v%3 != 0 })
		if disable {
			f = f.DisableChaining()
		}
		fm := weir.FlatMap(f, func(v int64, out weir.Collector[int64]) {
			out.Collect(v)
			if v%2 == 0 {
				out.Collect(v * 1000)
			}
		})
		out := run(t, env, fm)
		slices.Sort(out)
		return out
	}
	var want []int64
	for _, src := range [][2]int64{{1, 3000}, {-2000, -1}} {
		for v := src[0]; v <= src[1]; v++ {
			if v%3 != 0 {
				want = append(want, v)
				if v%2 == 0 {
					want = append(want, v*1000)
				}
			}
		}
	}
	slices.Sort(want)
	for _, disable := range []bool{false, true} {
		if got := build(disable); !slices.Equal(got, want) {
			t.Fatalf("chaining disabled=%t: %d elements, want %d", disable, len(got), len(want))
		}
	}
}

func TestRollingReduceStreaming(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	keyed := weir.KeyBy(weir.FromSlice(env, []int64{1, 2, 3, 4, 5, 6}), func(v int64) int64 { return v % 2 })
	out := run(t, env, weir.Reduce(keyed, func(a, b int64) int64 { return a + b }))
	slices.Sort(out)
	// odd: 1, 4, 9; even: 2, 6, 12 — every update is emitted in streaming mode.
	if want := []int64{1, 2, 4, 6, 9, 12}; !slices.Equal(out, want) {
		t.Fatalf("got %v, want %v", out, want)
	}
}

// TestRollingReduceBatches: a streaming reduce whose input arrives in
// batches (memory-layout records off the network) and whose output takes
// batches (a chained map) emits every update once, with the right value.
func TestRollingReduceBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	in := make([]tuple.T2[int64, int64], 20000)
	want := map[int64]int64{}
	for i := range in {
		k := rng.Int64N(50)
		in[i] = tuple.Of2(k, int64(1))
		want[k]++
	}
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	keyed := weir.KeyBy(weir.FromSlice(env, in), func(p tuple.T2[int64, int64]) int64 { return p.F0 })
	sums := weir.Reduce(keyed, func(a, b tuple.T2[int64, int64]) tuple.T2[int64, int64] { a.F1 += b.F1; return a })
	out := run(t, env, weir.Map(sums, func(p tuple.T2[int64, int64]) tuple.T2[int64, int64] { return p }))
	got := map[int64][]int64{}
	for _, p := range out {
		got[p.F0] = append(got[p.F0], p.F1)
	}
	for k, n := range want {
		vs := got[k]
		slices.Sort(vs)
		if int64(len(vs)) != n {
			t.Fatalf("key %d: %d updates, want %d", k, len(vs), n)
		}
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("key %d: updates %v, want 1..%d", k, vs, n)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
}
