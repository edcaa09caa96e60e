package keyedcount_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// Stop with a savepoint at a random moment (periodic checkpoints commit
// output before it): the job ends FINISHED with the savepoint's output
// committed, and a run resumed from it completes the output exactly as an
// uninterrupted run (the reference) has it.
func TestStopWithSavepointThenResume(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
	want := writeInput(t, in, r, 4000, 40)
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
		Interval: 100 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints"), Incremental: true}}
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 4000}), out, keyedcount.Format).Name("Committed counts").UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	c := rest.NewClient(job.RESTAddr(), nil)
	delay := time.Duration(100+r.IntN(600)) * time.Millisecond
	time.Sleep(delay)
	rid, err := c.StopWithSavepoint(context.Background(), job.ID(), rest.StopRequest{TargetDirectory: filepath.Join(dir, "savepoints")})
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	loc, err := waitSavepoint(t, c, job.ID(), rid)
	if err != nil {
		t.Fatalf("stop-with-savepoint failed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := job.Wait(ctx); err != nil {
		t.Fatalf("the stopped job did not end FINISHED: %v", err)
	}
	stopped := committed(t, out)
	if len(stopped) == 0 || len(stopped) >= len(want) {
		t.Fatalf("stopped after %v with %d of %d lines committed; the test needs a stop in the middle", delay, len(stopped), len(want))
	}
	for _, l := range stopped {
		if _, ok := slices.BinarySearch(want, l); !ok {
			t.Fatalf("the stopped run committed %q, which the reference does not have", l)
		}
	}
	t.Logf("stopped after %v: %d of %d lines committed, savepoint %s", delay, len(stopped), len(want), loc)
	cfg.RESTAddr, cfg.ResumeFrom, cfg.Parallelism = "", loc, 3
	cfg.Checkpointing.Dir = filepath.Join(dir, "checkpoints2")
	if err := keyedcount.Run(context.Background(), keyedcount.Options{Input: in, Output: out, RatePerSecond: 20000, Config: cfg}); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		onlyGot, onlyWant := diff(got, want)
		t.Fatalf("%d committed lines, want %d; only in output: %d (%s), only in reference: %d (%s)",
			len(got), len(want), len(onlyGot), first(onlyGot), len(onlyWant), first(onlyWant))
	}
}
