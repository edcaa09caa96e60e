package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// Sliding windows on the sliced operator resumed at another parallelism:
// a job with the window at parallelism 3 is cancelled after a checkpoint
// and resumed from it with the window at 2 (and the other way round). Slice
// state and window timers move with their key groups, the watermark is the
// minimum of the union state, and the committed output is what the general
// operator gives on an uninterrupted run: every window exactly once, with
// the contents of all its slices, late elements included.
func TestSlicedWindowsSurviveRescale(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 23))
	n := 3000 + rng.Int64N(2000)
	keys, disorder := 5+rng.Int64N(20), 1+rng.Int64N(10)
	elem := func(i int64) keyTs {
		ts := i + (i*104729)%disorder
		if i%37 == 0 {
			ts -= 30 + (i*7919)%60
		}
		return keyTs{F0: fmt.Sprintf("k%d", (i*7919)%keys), F1: ts}
	}
	assigner := weir.SlidingEventTimeWindows(25*time.Millisecond, 10*time.Millisecond)
	declare := func(env *weir.Environment, src weir.DataStream[int64], p int) (weir.DataStream[string], weir.DataStream[string]) {
		evs := weir.Map(src, elem).UID("elem")
		evs = weir.AssignTimestampsAndWatermarks(evs, weir.WatermarkStrategy[keyTs]{
			Timestamp: func(e keyTs) int64 { return e.F1 },
			Generator: weir.PunctuatedWatermarks[keyTs](time.Duration(disorder) * time.Millisecond)}).UID("wm")
		late := weir.NewOutputTag[keyTs]("late")
		ws := weir.Window(weir.KeyBy(evs, func(e keyTs) string { return e.F0 }), assigner).
			AllowedLateness(40 * time.Millisecond).SideOutputLateData(late)
		res := weir.WindowAggregateProcess[string, keyTs, sliceAcc, sliceAcc, string](ws, sliceAgg{},
			weir.ProcessWindowFunc[string, sliceAcc, string](func(ctx weir.WindowContext[string], a []sliceAcc, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s %v %+v ts=%d", ctx.CurrentKey(), ctx.Window(), a[0], ctx.Timestamp()))
				return nil
			})).UID("window").SetParallelism(p)
		return res, weir.Map(weir.SideOutput(res, late), func(e keyTs) string { return fmt.Sprint(e) }).UID("late")
	}
	restore := weir.ForceGeneralWindowOp(true)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	res, late := declare(env, weir.Generate(env, n, 0, func(i int64) int64 { return i }), 3)
	want, wantLate := collectBoth(t, env, weir.Collect(res), weir.Collect(late))
	restore()
	if len(want) == 0 || len(wantLate) == 0 {
		t.Fatalf("the reference has %d windows and %d late elements: the input tests nothing", len(want), len(wantLate))
	}
	type rescale struct {
		backend  string
		from, to int
	}
	cases := []rescale{{"hashmap", 3, 2}, {"pebble", 2, 3}}
	if !testing.Short() {
		cases = append(cases, rescale{"hashmap", 2, 3}, rescale{"pebble", 3, 2})
	}
	for _, rc := range cases {
		ps := [2]int{rc.from, rc.to}
		t.Run(fmt.Sprintf("%s/%d-to-%d", rc.backend, rc.from, rc.to), func(t *testing.T) {
			cpDir, resDir, lateDir, stateDir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
			var passed atomic.Int64
			var armed, done atomic.Int64
			build := func(p int, resume string) *weir.Environment {
				env := weir.NewEnvironment(weir.Config{Parallelism: 1, ResumeFrom: resume, StateBackend: rc.backend, StateDir: stateDir,
					Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: cpDir, Retained: 1},
					OnCheckpoint: func(id int64, _ bool) {
						if a := armed.Load(); a == 0 && passed.Load() >= n/3 {
							armed.Store(id + 1)
						} else if a > 0 && id >= a {
							done.Store(id)
						}
					}})
				src := weir.Generate(env, n, float64(n), func(i int64) int64 { passed.Store(i); return i }).UID("src")
				res, late := declare(env, src, p)
				weir.WriteFiles(res, resDir, nil).UID("res-sink")
				weir.WriteFiles(late, lateDir, nil).UID("late-sink")
				return env
			}
			before := weir.SlicedOpsOpened()
			j, err := build(ps[0], "").ExecuteAsync(context.Background(), "sliced-rescale")
			if err != nil {
				t.Fatal(err)
			}
			for done.Load() == 0 {
				select {
				case <-j.Done():
					t.Fatal("the first job ended before the checkpoint past a third of the input")
				case <-time.After(time.Millisecond):
				}
			}
			j.Cancel()
			j.Wait(context.Background())
			j2, err := build(ps[1], "latest").ExecuteAsync(context.Background(), "sliced-rescale")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if weir.SlicedOpsOpened() == before {
				t.Fatal("the sliced operator did not run")
			}
			if j2.RestoredFrom() == "" {
				t.Fatal("the second job did not restore")
			}
			t.Logf("resumed from %s", j2.RestoredFrom())
			for name, c := range map[string][2][]string{"windows": {readCommitted(t, resDir), want}, "late elements": {readCommitted(t, lateDir), wantLate}} {
				got, want := c[0], slices.Clone(c[1])
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d results, want %d; first difference: %s", name, len(got), len(want), firstDiff(got, want))
				}
			}
		})
	}
}
