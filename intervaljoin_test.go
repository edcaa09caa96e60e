package weir_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// joinEv is an element of either side of a join test.
type joinEv struct{ Key, Ts, ID int64 }

// orderedWithin returns n elements with timestamps i*step + jitter, jitter in
// [0, disorder]: never later than a punctuated watermark with out-of-
// orderness disorder allows, so no element is late whatever the timing.
func orderedWithin(rng *rand.Rand, n, keys, step, disorder, idBase int64) []joinEv {
	out := make([]joinEv, n)
	for i := range out {
		out[i] = joinEv{Key: rng.Int64N(keys), Ts: int64(i)*step + rng.Int64N(disorder+1), ID: idBase + int64(i)}
	}
	return out
}

// joinSources reads both sides from one source, interleaved in order of
// their timestamps' base (left and right IDs tell them apart), and splits
// them with a side output: both sides advance together, so buffers are
// cleaned while the other side still sends, as in a live job (two separate
// slice sources would let one side finish before the other starts).
func joinSources(env *weir.Environment, left, right []joinEv, disorder int64) (weir.KeyedStream[int64, joinEv], weir.KeyedStream[int64, joinEv]) {
	var in []joinEv
	for i := range max(len(left), len(right)) {
		if i < len(left) {
			in = append(in, left[i])
		}
		if i < len(right) {
			in = append(in, right[i])
		}
	}
	s := weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, in).SetParallelism(1), weir.WatermarkStrategy[joinEv]{
		Timestamp: func(e joinEv) int64 { return e.Ts },
		Generator: weir.PunctuatedWatermarks[joinEv](time.Duration(disorder) * time.Millisecond)}).SetParallelism(1)
	rightTag := weir.NewOutputTag[joinEv]("right")
	l := weir.Process(s, weir.ProcessFunc[joinEv, joinEv](func(ctx weir.Context, e joinEv, out weir.Collector[joinEv]) error {
		if e.ID >= rightIDs {
			rightTag.Output(ctx, e)
		} else {
			out.Collect(e)
		}
		return nil
	})).SetParallelism(1)
	key := func(e joinEv) int64 { return e.Key }
	return weir.KeyBy(l, key), weir.KeyBy(weir.SideOutput(l, rightTag), key)
}

const rightIDs = 1_000_000

// withTimestamp appends each element's record timestamp, as a downstream
// operator sees it.
func withTimestamp(s weir.DataStream[string]) weir.DataStream[string] {
	return weir.Process(s, weir.ProcessFunc[string, string](func(ctx weir.Context, v string, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s rec=%d", v, ctx.Timestamp()))
		return nil
	}))
}

// The interval join finds exactly the pairs a nested loop over both whole
// inputs finds (same key, right.Ts - left.Ts within the bounds), each once,
// with timestamp max(left, right) on the pair's context and on the record.
func TestIntervalJoinMatchesNestedLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 9))
	type bounds struct {
		lower, upper         int64
		lowerExcl, upperExcl bool
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 3} {
			b := []bounds{{-20, 20, false, false}, {-30, -5, true, false}, {0, 15, false, true}, {5, 40, true, true}, {0, 0, false, false}}[rng.IntN(5)]
			t.Run(fmt.Sprintf("%s/p=%d/[%d,%d]excl=%v,%v", backend, p, b.lower, b.upper, b.lowerExcl, b.upperExcl), func(t *testing.T) {
				n := 1000 + rng.Int64N(2000)
				keys := 1 + rng.Int64N(50)
				disorder := rng.Int64N(30)
				left := orderedWithin(rng, n, keys, 2, disorder, 0)
				right := orderedWithin(rng, n+rng.Int64N(500), keys, 2, disorder, rightIDs)
				lo, hi := b.lower, b.upper
				if b.lowerExcl {
					lo++
				}
				if b.upperExcl {
					hi--
				}
				var want []string
				for _, l := range left {
					for _, r := range right {
						if l.Key == r.Key && r.Ts >= l.Ts+lo && r.Ts <= l.Ts+hi {
							ts := max(l.Ts, r.Ts)
							want = append(want, fmt.Sprintf("k%d %d-%d ts=%d l=%d r=%d rec=%d", l.Key, l.ID, r.ID, ts, l.Ts, r.Ts, ts))
						}
					}
				}
				env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir()})
				ls, rs := joinSources(env, left, right, disorder)
				j := weir.IntervalJoin(ls, rs).
					Between(time.Duration(b.lower)*time.Millisecond, time.Duration(b.upper)*time.Millisecond)
				if b.lowerExcl {
					j = j.LowerBoundExclusive()
				}
				if b.upperExcl {
					j = j.UpperBoundExclusive()
				}
				res := weir.ProcessIntervalJoin(j, weir.ProcessJoinFunc[joinEv, joinEv, string](func(ctx weir.ProcessJoinContext, l, r joinEv, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("k%d %d-%d ts=%d l=%d r=%d", l.Key, l.ID, r.ID, ctx.Timestamp(), ctx.LeftTimestamp(), ctx.RightTimestamp()))
					return nil
				}))
				got := run(t, env, withTimestamp(res))
				slices.Sort(got)
				slices.Sort(want)
				if len(want) == 0 {
					t.Fatal("the reference found no pairs: the test proves nothing")
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d pairs, want %d; first difference: %s", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got %q, want %q", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra %q", got[len(want)])
	}
	return fmt.Sprintf("missing %q", want[len(got)])
}
