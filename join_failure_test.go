package weir_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// readCommitted reads the lines of the committed part files under dir
// (names starting with "." or "_" are uncommitted).
func readCommitted(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if l != "" {
					lines = append(lines, l)
				}
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// An interval join and a keyed co-process function in one job fail once
// after a checkpoint and restart from it: their buffers, state and timers
// come back, and the committed output (files committed per checkpoint) is
// what nested loops over the input give, each result exactly once.
func TestIntervalJoinAndKeyedCoProcessSurviveFailure(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 13))
	n := 3000 + rng.Int64N(2000)
	keys, disorder := 5+rng.Int64N(20), 1+rng.Int64N(20)
	elem := func(i int64) joinEv { // deterministic, so the reference can replay it
		e := joinEv{Key: (i * 7919) % keys, Ts: i + (i*104729)%disorder, ID: i}
		if i%2 == 1 {
			e.ID += rightIDs
		}
		return e
	}
	var left, right []joinEv
	for i := range n {
		if e := elem(i); e.ID >= rightIDs {
			right = append(right, e)
		} else {
			left = append(left, e)
		}
	}
	var wantJoin []string
	for _, l := range left {
		for _, r := range right {
			if l.Key == r.Key && r.Ts >= l.Ts-10 && r.Ts <= l.Ts+10 {
				wantJoin = append(wantJoin, fmt.Sprintf("%d-%d", l.ID, r.ID))
			}
		}
	}
	counts := map[string]int64{}
	for _, e := range left {
		counts[fmt.Sprintf("k%d end=%d", e.Key, bucketEnd(e.Ts))]++
	}
	for _, e := range right {
		counts[fmt.Sprintf("k%d end=%d", e.Key, bucketEnd(e.Ts))] += 1000
	}
	var wantCounts []string
	for k, c := range counts {
		wantCounts = append(wantCounts, fmt.Sprintf("%s n=%d", k, c))
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			f := newFailOnce(int64(n))
			env := weir.NewEnvironment(f.config(t, backend))
			// About a second of input, so that checkpoints complete mid-way.
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			evs := weir.Map(src, func(i int64) joinEv {
				f.pass(int64(i))
				return elem(i)
			}).SetParallelism(1)
			evs = weir.AssignTimestampsAndWatermarks(evs, weir.WatermarkStrategy[joinEv]{
				Timestamp: func(e joinEv) int64 { return e.Ts },
				Generator: weir.PunctuatedWatermarks[joinEv](time.Duration(disorder) * time.Millisecond)}).SetParallelism(1)
			rightTag := weir.NewOutputTag[joinEv]("right")
			split := weir.Process(evs, weir.ProcessFunc[joinEv, joinEv](func(ctx weir.Context, e joinEv, out weir.Collector[joinEv]) error {
				if e.ID >= rightIDs {
					rightTag.Output(ctx, e)
				} else {
					out.Collect(e)
				}
				return nil
			})).SetParallelism(1)
			key := func(e joinEv) int64 { return e.Key }
			ls, rs := weir.KeyBy(split, key), weir.KeyBy(weir.SideOutput(split, rightTag), key)
			joined := weir.ProcessIntervalJoin(weir.IntervalJoin(ls, rs).Between(-10*time.Millisecond, 10*time.Millisecond),
				weir.ProcessJoinFunc[joinEv, joinEv, string](func(_ weir.ProcessJoinContext, l, r joinEv, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%d-%d", l.ID, r.ID))
					return nil
				}))
			joinDir, countDir := t.TempDir(), t.TempDir()
			weir.WriteFiles(joined, joinDir, nil)
			weir.WriteFiles(weir.KeyedCoProcess[int64, joinEv, joinEv, string](weir.ConnectKeyed(ls, rs), &bucketCounter{}), countDir, nil)
			if _, err := env.Execute(context.Background(), "join-failure"); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			for name, c := range map[string][2][]string{"interval join": {readCommitted(t, joinDir), wantJoin}, "keyed co-process": {readCommitted(t, countDir), wantCounts}} {
				got, want := c[0], c[1]
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d results, want %d (restored from checkpoint %d); first difference: %s", name, len(got), len(want), f.restoredFrom.Load(), firstDiff(got, want))
				}
			}
		})
	}
}
