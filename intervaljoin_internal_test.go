package weir

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// ijSim drives an intervalJoinFn directly, as keyedCoOp does: elements with
// a timestamp and a key, and watermark advances that fire the due timers
// (also advances to the same watermark, as an input turning idle makes).
type ijSim struct {
	RuntimeContext // not used by the join
	k              statebackend.Keyed
	key, ts, wm    int64
	timers         map[[2]int64]bool // (key, time)
}

func (s *ijSim) Timestamp() int64               { return s.ts }
func (s *ijSim) CurrentKey() int64              { return s.key }
func (s *ijSim) TimerService() TimerService     { return s }
func (s *ijSim) State() state.KeyedStore        { return s.k }
func (s *ijSim) TimeDomain() TimeDomain         { return EventTime }
func (s *ijSim) CurrentProcessingTime() int64   { return 0 }
func (s *ijSim) CurrentWatermark() int64        { return s.wm }
func (s *ijSim) RegisterEventTimeTimer(t int64) { s.timers[[2]int64{s.key, t}] = true }
func (s *ijSim) DeleteEventTimeTimer(t int64)   { delete(s.timers, [2]int64{s.key, t}) }
func (s *ijSim) RegisterProcessingTimeTimer(int64) {
	panic("the interval join registers no processing-time timer")
}
func (s *ijSim) DeleteProcessingTimeTimer(int64) {
	panic("the interval join deletes no processing-time timer")
}

func (s *ijSim) setKey(key int64) {
	s.key = key
	s.k.SetCurrentKey(binary.BigEndian.AppendUint64(nil, uint64(key)), int(key%joinBufMaxPar))
}

// flinkJoin is the reference: Flink's IntervalJoinOperator, literally: a
// bucket per (side, key, timestamp), an exact timer per bucket at its
// cleanup time (namespaced by side), removed when that timer fires.
type flinkJoin struct {
	lower, upper int64
	buf          [2]map[int64]map[int64][]int64 // side -> key -> ts -> ids
	timers       map[[3]int64]bool              // (side, key, time)
}

func (r *flinkJoin) cleanup(side int, ts int64) int64 {
	if side == 0 {
		return ts + max(r.upper, 0)
	}
	return ts + max(-r.lower, 0)
}

func (r *flinkJoin) element(side int, key, ts, id, wm int64, emit func(l, r int64)) {
	if wm != math.MinInt64 && ts < wm {
		return // late
	}
	other := r.buf[1-side][key]
	for ots, ids := range other {
		lts, rts := ts, ots
		if side == 1 {
			lts, rts = ots, ts
		}
		if rts < lts+r.lower || rts > lts+r.upper {
			continue
		}
		for _, oid := range ids {
			if side == 0 {
				emit(id, oid)
			} else {
				emit(oid, id)
			}
		}
	}
	if r.buf[side][key] == nil {
		r.buf[side][key] = map[int64][]int64{}
	}
	r.buf[side][key][ts] = append(r.buf[side][key][ts], id)
	r.timers[[3]int64{int64(side), key, r.cleanup(side, ts)}] = true
}

func (r *flinkJoin) advance(wm int64) {
	for t := range r.timers {
		if t[2] > wm {
			continue
		}
		delete(r.timers, t)
		side, key := int(t[0]), t[1]
		for ts := range r.buf[side][key] {
			if r.cleanup(side, ts) == t[2] {
				delete(r.buf[side][key], ts)
			}
		}
	}
}

// The coarse cleanup gives exactly Flink's pairs, with late elements,
// elements at exactly the watermark, bounds on either side of zero and
// same-value advances, on both backends; and after every advance each
// buffered element's cleanup timer is still ahead (no buffer outlives its
// timer width), and nothing is left at the end.
func TestIntervalJoinCoarseCleanupIsFlinks(t *testing.T) {
	rng := testseed.Rand(t, 13)
	for round := range 12 {
		backend := []string{statebackend.KindHashMap, statebackend.KindPebble}[round%2]
		bounds := [][2]int64{{-20, 20}, {-30, -5}, {0, 15}, {5, 40}, {0, 0}, {-7, 0}, {-1, 1}}[rng.IntN(7)]
		t.Run(fmt.Sprintf("%s/[%d,%d]", backend, bounds[0], bounds[1]), func(t *testing.T) {
			k, err := statebackend.New(statebackend.Config{Kind: backend, Dir: t.TempDir(), MaxParallelism: joinBufMaxPar,
				Range: keygroup.Range{Start: 0, End: joinBufMaxPar - 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			sim := &ijSim{k: k, wm: math.MinInt64, timers: map[[2]int64]bool{}}
			var got, want [][2]int64
			f := &intervalJoinFn[int64, int64, int64, int64]{lower: bounds[0], upper: bounds[1], ca: codec.Int64(), cb: codec.Int64(),
				fn: ProcessJoinFunc[int64, int64, int64](func(_ ProcessJoinContext, l, r int64, _ Collector[int64]) error {
					got = append(got, [2]int64{l, r})
					return nil
				})}
			if err := f.Open(sim); err != nil {
				t.Fatal(err)
			}
			cur := 0
			col := &collector[int64]{ctx: operator.NewContext(&cur, 0)}
			ref := &flinkJoin{lower: bounds[0], upper: bounds[1], buf: [2]map[int64]map[int64][]int64{{}, {}}, timers: map[[3]int64]bool{}}
			keys := 1 + rng.Int64N(8)
			clock := int64(0)
			advance := func(wm int64) {
				sim.wm = wm
				ref.advance(wm)
				for {
					var due [][2]int64
					for tm := range sim.timers {
						if tm[1] <= wm {
							due = append(due, tm)
						}
					}
					if len(due) == 0 {
						break
					}
					tm := slices.MinFunc(due, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[1], b[1]), cmp.Compare(a[0], b[0])) })
					delete(sim.timers, tm)
					sim.setKey(tm[0])
					if err := f.OnTimer(sim, tm[1], col); err != nil {
						t.Fatal(err)
					}
				}
			}
			for id := int64(0); id < 3000; id++ {
				if rng.IntN(8) == 0 {
					// Advance (sometimes not at all: an idle input's).
					w := clock - rng.Int64N(10)
					if sim.wm != math.MinInt64 {
						w = max(w, sim.wm)
					}
					advance(w)
					// Nothing buffered may be past its cleanup timer.
					for key := range keys {
						sim.setKey(key)
						var cs []int64
						if f.hl != nil {
							for _, e := range f.hl.elems() {
								cs = append(cs, addTs(e.ts, f.leftKeep))
							}
							for _, e := range f.hr.elems() {
								cs = append(cs, addTs(e.ts, f.rightKeep))
							}
						} else {
							for ts := range f.left.Keys() {
								cs = append(cs, addTs(ts, f.leftKeep))
							}
							for ts := range f.right.Keys() {
								cs = append(cs, addTs(ts, f.rightKeep))
							}
						}
						for _, c := range cs {
							if f.cleanupTimer(c) <= w {
								t.Fatalf("key %d: a bucket with cleanup time %d (timer %d) is still buffered at watermark %d", key, c, f.cleanupTimer(c), w)
							}
						}
					}
					continue
				}
				clock += rng.Int64N(3)
				side, key := rng.IntN(2), rng.Int64N(keys)
				ts := clock - rng.Int64N(15) // often late or at the watermark
				if rng.IntN(6) == 0 && sim.wm != math.MinInt64 {
					ts = sim.wm // the edge: exactly at the watermark
				}
				sim.setKey(key)
				sim.ts = ts
				ref.element(side, key, ts, id, sim.wm, func(l, r int64) { want = append(want, [2]int64{l, r}) })
				if side == 0 {
					err = f.ProcessElement1(sim, id, col)
				} else {
					err = f.ProcessElement2(sim, id, col)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			advance(math.MaxInt64)
			less := func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }
			slices.SortFunc(got, less)
			slices.SortFunc(want, less)
			if len(want) == 0 {
				t.Fatal("the reference found no pairs: the test proves nothing")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d pairs, want %d (Flink's); got %v..., want %v...", len(got), len(want), got[:min(len(got), 10)], want[:min(len(want), 10)])
			}
			if len(sim.timers) != 0 {
				t.Fatalf("%d timers left after the final watermark", len(sim.timers))
			}
			for key := range keys {
				sim.setKey(key)
				if f.hl != nil && (len(f.hl.elems()) > 0 || len(f.hr.elems()) > 0) || f.hl == nil && (!f.left.IsEmpty() || !f.right.IsEmpty()) {
					t.Fatalf("key %d: buffers left after the final watermark", key)
				}
			}
		})
	}
}
