package windowagg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/windowagg"
)

// slowFailer slows the window's chain (so that unaligned barriers overtake
// queued input) and fails it once, in attempt 0, after failAt results.
type slowFailer struct {
	failAt int
	fired  *atomic.Int64
	ctx    weir.RuntimeContext
	seen   int
}

func (f *slowFailer) Open(ctx weir.RuntimeContext) error { f.ctx = ctx; return nil }

func (f *slowFailer) ProcessElement(_ weir.Context, a windowagg.Agg, out weir.Collector[windowagg.Agg]) error {
	f.seen++
	if f.seen%4 == 0 {
		time.Sleep(time.Millisecond)
	}
	if f.ctx.Attempt() == 0 && f.ctx.Subtask() == 0 && f.seen == f.failAt {
		f.fired.Add(1)
		return fmt.Errorf("injected failure at result %d", f.seen)
	}
	out.Collect(a)
	return nil
}

// window-agg (sliding windows, allowed lateness, a late output) with
// unaligned checkpoints under backpressure, failed once and restored from
// its latest checkpoint, commits exactly the reference's output: records
// that were in flight at the checkpoint are replayed with the watermarks
// that were in flight among them, so each is late or on time as in a run
// without failure. (Before the watermarks were channel state, most runs of
// 10 seeds had a seed with an extra late firing.) WEIR_FAULT_CASES sets
// the number of seeds.
func TestWindowAggUnalignedRestoreMatchesReference(t *testing.T) {
	cases := 10
	if testing.Short() {
		cases = 3
	}
	if v := os.Getenv("WEIR_FAULT_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WEIR_FAULT_CASES=%q: want a whole number of seeds, at least 1", v)
		}
		cases = n
	}
	base := testseed.New(t)
	for i := range cases {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("rerun with WEIR_SEED=%d -run 'TestWindowAggUnalignedRestoreMatchesReference/%d'", base, seed)
			r := rand.New(rand.NewPCG(seed, 3))
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			ooo := int64(30)
			lateness := int64(300)
			evs := genInput(r, in, 3000, 12, ooo)
			sp := windowagg.Spec{Kind: "sliding", Size: 300 * time.Millisecond, Slide: 70 * time.Millisecond}
			p := 1 + r.IntN(4)
			failAt := 100 + r.IntN(2000/p)
			var fired atomic.Int64
			cfg := weir.Config{Parallelism: p, RESTAddr: "",
				Checkpointing: &weir.CheckpointConfig{Interval: time.Duration(20+r.IntN(50)) * time.Millisecond, Dir: filepath.Join(dir, "ck"), Unaligned: true, TolerableFailures: 1000},
				Restart:       map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10", "restart-strategy.fixed-delay.delay": "0 ms"}}
			env := weir.NewEnvironment(cfg)
			o := windowagg.Options{Input: in, Window: sp, OutOfOrderness: time.Duration(ooo) * time.Millisecond,
				AllowedLateness: time.Duration(lateness) * time.Millisecond, Punctuated: true, RatePerSecond: 6000}
			results, lateEvents := windowagg.Build(env, o)
			results = weir.Process(results, weir.ProcessFunction[windowagg.Agg, windowagg.Agg](&slowFailer{failAt: failAt, fired: &fired})).Name("Fail").UID("fail")
			weir.WriteFiles(results, filepath.Join(dir, "out"), windowagg.Format).UID("results")
			weir.WriteFiles(lateEvents, filepath.Join(dir, "late"), func(e windowagg.Event) string { return e.Text }).UID("late")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := env.Execute(ctx, "window-agg-faults"); err != nil {
				t.Fatal(err)
			}
			wantRes, wantLate := reference(evs, sp, ooo, lateness)
			t.Logf("p %d, fail at %d, fired %d", p, failAt, fired.Load())
			diff(t, "results", committedLines(t, filepath.Join(dir, "out")), wantRes)
			diff(t, "late", committedLines(t, filepath.Join(dir, "late")), wantLate)
		})
	}
}
