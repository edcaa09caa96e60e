package windowagg_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/windowagg"
)

// committedLines reads the committed lines of an exactly-once output
// directory (files not starting with . or _), sorted.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

func countOf(t *testing.T, results []string) int {
	t.Helper()
	n := 0
	for _, l := range results {
		var a struct{ Count int }
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("result %q: %v", l, err)
		}
		n += a.Count
	}
	return n
}

// Stop with --drain at a random moment: the source (parallelism 1, reading
// the file in order) stops after a prefix of k events, and the maximum
// watermark fires every window first, so the stopped run's committed output
// is exactly the reference's for those k events (every window of them
// fired, as at the end of input). The run resumed from the savepoint starts
// with no window state left and fires nothing twice: both runs' output is
// exactly the reference's for a drain after k events (every window fired
// and purged there; the watermark goes on from before the drain).
func TestStopWithDrainFiresEverythingOnce(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	const n = 3000
	ooo := int64(40)
	evs := genInput(r, in, n, 5, ooo)
	sp := windowagg.Spec{Kind: "tumbling", Size: time.Duration(50+r.Int64N(150)) * time.Millisecond}
	o := windowagg.Options{Input: in, Output: filepath.Join(dir, "out"), LateOutput: filepath.Join(dir, "late"),
		Window: sp, OutOfOrderness: time.Duration(ooo) * time.Millisecond, Punctuated: true, RatePerSecond: 3000,
		Config: weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
			Interval: 100 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints")}}}
	env := weir.NewEnvironment(o.Config)
	results, lateEvents := windowagg.Build(env, o)
	weir.WriteFiles(results, o.Output, windowagg.Format).Name("Results").UID("results")
	weir.WriteFiles(lateEvents, o.LateOutput, func(e windowagg.Event) string { return e.Text }).Name("Late events").UID("late")
	job, err := env.ExecuteAsync(context.Background(), "window-agg")
	if err != nil {
		t.Fatal(err)
	}
	c := rest.NewClient(job.RESTAddr(), nil)
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	if err := c.WaitAllRunning(waitCtx, job.ID()); err != nil {
		t.Fatal(err)
	}
	delay := time.Duration(150+r.IntN(500)) * time.Millisecond
	time.Sleep(delay)
	rid, err := c.StopWithSavepoint(context.Background(), job.ID(), rest.StopRequest{TargetDirectory: filepath.Join(dir, "savepoints"), Drain: true})
	if err != nil {
		t.Fatalf("stop --drain: %v", err)
	}
	loc := ""
	for deadline := time.Now().Add(time.Minute); loc == ""; time.Sleep(20 * time.Millisecond) {
		res, err := c.SavepointStatus(context.Background(), job.ID(), rid)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.ID == rest.StatusCompleted {
			if res.Operation.FailureCause != nil {
				t.Fatalf("stop failed: %s", res.Operation.FailureCause.StackTrace)
			}
			loc = res.Operation.Location
		}
		if time.Now().After(deadline) {
			t.Fatal("the stop did not complete within a minute")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := job.Wait(ctx); err != nil {
		t.Fatalf("the stopped job did not end FINISHED: %v", err)
	}
	res1, late1 := committedLines(t, o.Output), committedLines(t, o.LateOutput)
	k := countOf(t, res1) + len(late1)
	if k == 0 || k >= n {
		t.Fatalf("stopped after %v with %d of %d events accounted for; the test needs a stop in the middle", delay, k, n)
	}
	t.Logf("stopped after %v: %d of %d events, window %v, savepoint %s", delay, k, n, sp.Size, loc)
	wantRes1, wantLate1 := reference(evs[:k], sp, ooo, 0)
	diff(t, "stopped run's results (reference: the first k events to their end)", res1, wantRes1)
	diff(t, "stopped run's late elements", late1, wantLate1)

	// The resumed run writes into the same directories (its sink commits
	// what the savepoint holds, idempotently, by name there).
	o2 := o
	o2.RatePerSecond = 0
	o2.Config.RESTAddr, o2.Config.ResumeFrom, o2.Config.Parallelism = "", loc, 3
	o2.Config.Checkpointing = &weir.CheckpointConfig{Interval: 100 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints2")}
	if err := windowagg.Run(context.Background(), o2); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	wantRes, wantLate := referenceDrained(evs, sp, ooo, 0, k)
	diff(t, "both runs' results (reference: drained after k events, then the rest)", committedLines(t, o.Output), wantRes)
	diff(t, "both runs' late elements", committedLines(t, o.LateOutput), wantLate)
}
