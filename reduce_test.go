package weir_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/tuple"
)

// The streaming Reduce emits each key's running result. Summing positive
// values of random (skewed) int64 keys, the committed output of an
// exactly-once file sink must be exactly the running sums a plain loop
// computes (as a multiset: per key they only grow), on both backends,
// without a failure and with one after a checkpoint (the heap backend's
// Reduce updates most entries without setting the key; checkpoints every
// 20 ms make entries shared with a snapshot, which it must not write).
// The reduce hands on batches to a Map and single elements to a Process
// function: two paths through the operator.
func TestStreamingReduceMatchesRunningSums(t *testing.T) {
	rng := testseed.Rand(t, 6)
	const n = 40000
	in := make([]tuple.T2[int64, int64], n)
	sums := map[int64]int64{}
	var want []string
	for i := range in {
		k := int64(rng.IntN(5000))
		if rng.IntN(3) == 0 {
			k = int64(rng.IntN(8)) - 4 // hot keys, negative ones among them
		}
		v := 1 + rng.Int64N(1000)
		in[i] = tuple.Of2(k, v)
		sums[k] += v
		want = append(want, fmt.Sprintf("%d %d", k, sums[k]))
	}
	slices.Sort(want)
	format := func(p tuple.T2[int64, int64]) string { return fmt.Sprintf("%d %d", p.F0, p.F1) }
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, c := range []struct {
			fail    bool
			element bool
		}{{false, false}, {true, false}, {true, true}} {
			fail := c.fail
			t.Run(fmt.Sprintf("%s/failure=%v/element=%v", backend, fail, c.element), func(t *testing.T) {
				f := newFailOnce(n)
				cfg := f.config(t, backend)
				cfg.Parallelism = 2
				env := weir.NewEnvironment(cfg)
				// About a second of input, so that checkpoints complete mid-way.
				src := weir.Generate(env, n, float64(n), func(i int64) tuple.T2[int64, int64] {
					if fail {
						f.pass(i)
					}
					return in[i]
				}).SetParallelism(1)
				sum := weir.Reduce(weir.KeyBy(src, func(p tuple.T2[int64, int64]) int64 { return p.F0 }),
					func(a, b tuple.T2[int64, int64]) tuple.T2[int64, int64] { a.F1 += b.F1; return a })
				dir := t.TempDir()
				var lines weir.DataStream[string]
				if !c.element {
					lines = weir.Map(sum, format)
				} else {
					lines = weir.Process(sum, weir.ProcessFunc[tuple.T2[int64, int64], string](
						func(_ weir.Context, p tuple.T2[int64, int64], out weir.Collector[string]) error {
							out.Collect(format(p))
							return nil
						}))
				}
				weir.WriteFiles(lines, dir, nil)
				if _, err := env.Execute(context.Background(), "reduce-running-sums"); err != nil {
					t.Fatal(err)
				}
				if fail {
					f.check(t)
				}
				got := readCommitted(t, dir)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%d results, want %d (restored from checkpoint %d); first difference: %s", len(got), len(want), f.restoredFrom.Load(), firstDiff(got, want))
				}
			})
		}
	}
}

// batchKey is a named string type: batch mode numbers its keys as strings.
type batchKey string

// In batch mode, Reduce keeps one accumulator per key and emits each
// key's final value at the end. String keys go through their own index
// (short ones held in its slots as words): random keys of every length
// around its inline limit, with NUL bytes that its zero padding must not
// confuse with shorter keys, must sum exactly as a Go map does.
func TestBatchReduceStringKeysMatchesMap(t *testing.T) {
	rng := testseed.Rand(t, 7)
	type rec = tuple.T2[batchKey, int64]
	var in []rec
	want := map[batchKey]int64{}
	alphabet := "\x00ab\xff"
	for range 30000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(2) == 0 {
			b = b[:min(len(b), 3)] // hot keys
		}
		v := rng.Int64N(1000)
		in = append(in, tuple.Of2(batchKey(b), v))
		want[batchKey(b)] += v
	}
	env := weir.NewEnvironment(weir.Config{Mode: weir.Batch, Parallelism: 2})
	src := weir.FromSlice(env, in)
	sums := weir.Collect(weir.Reduce(weir.KeyBy(src, func(r rec) batchKey { return r.F0 }),
		func(a, b rec) rec { a.F1 += b.F1; return a }))
	job, err := env.ExecuteAsync(context.Background(), "batch-reduce-strings")
	if err != nil {
		t.Fatal(err)
	}
	got := map[batchKey]int64{}
	for r := range sums.All() {
		if _, dup := got[r.F0]; dup {
			t.Fatalf("key %q emitted twice", r.F0)
		}
		got[r.F0] = r.F1
	}
	if _, err := job.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("key %q: sum %d, want %d", k, got[k], w)
		}
	}
}

// A batch Reduce whose accumulators pass Config.BatchStateMemory fails,
// naming the setting, for integer and string keys; the same job with the
// bound raised (or with few keys) succeeds. Each key counts at least the
// 32 bytes of table besides its key and value, so 10,000 distinct keys
// over two subtasks need more than 64 KiB.
func TestBatchReduceMemoryBound(t *testing.T) {
	type rec = tuple.T2[int64, int64]
	in := make([]rec, 20000)
	for i := range in {
		in[i] = tuple.Of2(int64(i%10000), int64(1))
	}
	sum := func(a, b rec) rec { a.F1 += b.F1; return a }
	run := func(mem int64, stringKeys bool) (int, error) {
		env := weir.NewEnvironment(weir.Config{Mode: weir.Batch, Parallelism: 2, BatchStateMemory: mem})
		src := weir.FromSlice(env, in)
		var out []rec
		var err error
		if stringKeys {
			ks := weir.KeyBy(src, func(r rec) string { return fmt.Sprint(r.F0) })
			out, err = weir.ExecuteAndCollect(context.Background(), env, weir.Reduce(ks, sum), "bounded-reduce")
		} else {
			ks := weir.KeyBy(src, func(r rec) int64 { return r.F0 })
			out, err = weir.ExecuteAndCollect(context.Background(), env, weir.Reduce(ks, sum), "bounded-reduce")
		}
		return len(out), err
	}
	for _, strs := range []bool{false, true} {
		if _, err := run(64<<10, strs); err == nil || !strings.Contains(err.Error(), "Config.BatchStateMemory") {
			t.Fatalf("string keys %t, 10,000 keys under a bound of 64 KiB: %v, want a failure naming Config.BatchStateMemory", strs, err)
		}
		if n, err := run(4<<20, strs); err != nil || n != 10000 {
			t.Fatalf("string keys %t, under a bound of 4 MiB: %d keys, %v; want 10000", strs, n, err)
		}
	}
	if _, err := run(-1, false); err == nil || !strings.Contains(err.Error(), "Config.BatchStateMemory") {
		t.Fatalf("a negative bound: %v, want an error naming Config.BatchStateMemory", err)
	}
}
