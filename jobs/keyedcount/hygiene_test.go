package keyedcount_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// A run resumed with --from latest subsumes the earlier run's checkpoints:
// the newest Retained complete checkpoints across both runs are all that is
// left, with the shared files they reference and nothing else; the earlier
// run's incomplete checkpoint and unreferenced shared file (as a kill
// leaves them) are gone; another job's directory and one that names no job
// are untouched; the output is exactly once.
func TestResumeCleansEarlierRuns(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	want := writeInput(t, in, r, 8000, 200)
	const retained = 2
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{
		Interval: 30 * time.Millisecond, Dir: ck, Incremental: true, Retained: retained}}

	// Run 1: canceled once three checkpoints completed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx1, stop := context.WithCancel(ctx)
	var done atomic.Int32
	first := ""
	c1 := cfg
	c1.OnSubmit = func(j *weir.Job) { first = j.ID() }
	c1.OnCheckpoint = func(int64, bool) {
		if done.Add(1) == 3 {
			stop()
		}
	}
	err := keyedcount.Run(ctx1, keyedcount.Options{Input: in, Output: out, RatePerSecond: 4000, Config: c1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run 1: %v, want canceled", err)
	}
	store, err := storage.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if ids, _ := storage.Completed(ctx, store, first); len(ids) == 0 {
		t.Fatal("run 1 left no complete checkpoint")
	}
	// What a kill leaves: an incomplete checkpoint, an unreferenced shared
	// file. And two directories that must stay.
	put := func(key string) {
		if err := store.Put(ctx, key, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	put(storage.CheckpointPrefix(first, 999) + "op-0-keyed")
	put(storage.SharedKey(first, "orphan.sst"))
	if err := storage.WriteJobInfo(ctx, store, storage.Metadata{JobID: "other", JobName: "another-job"}); err != nil {
		t.Fatal(err)
	}
	put(storage.CheckpointPrefix("other", 1) + "op-0-keyed")
	put(storage.CheckpointPrefix("unnamed", 1) + "op-0-keyed")
	// A run of this job whose metadata cannot be read (damaged, or a newer
	// format): what it references is unknown, so it stays.
	if err := storage.WriteJobInfo(ctx, store, storage.Metadata{JobID: "unreadable", JobName: "keyed-count"}); err != nil {
		t.Fatal(err)
	}
	put(storage.MetadataKey("unreadable", 1))
	put(storage.SharedKey("unreadable", "x.sst"))

	// Run 2: resumed, to the end.
	c2 := cfg
	c2.ResumeFrom = "latest"
	second := ""
	c2.OnSubmit = func(j *weir.Job) { second = j.ID() }
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 4000, Config: c2}); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines, want %d", len(got), len(want))
	}
	var all []storage.Metadata
	needed := map[string]bool{}
	for _, job := range []string{first, second} {
		ids, err := storage.CheckpointIDs(ctx, store, job)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			m, err := storage.ReadMetadata(ctx, store, job, id)
			if err != nil {
				t.Fatalf("%s: %v (an incomplete checkpoint is left)", storage.CheckpointPrefix(job, id), err)
			}
			all = append(all, *m)
			for _, k := range m.SharedKeys() {
				needed[k] = true
			}
		}
		shared, _ := storage.ListAll(ctx, store, storage.SharedPrefix(job))
		for _, k := range shared {
			if !needed[k] {
				t.Errorf("shared file %s is referenced by no retained checkpoint", k)
			}
		}
	}
	if len(all) == 0 || len(all) > retained {
		t.Fatalf("%d complete checkpoints across the two runs, want 1 to %d", len(all), retained)
	}
	if ids, _ := storage.Completed(ctx, store, second); len(ids) == 0 {
		t.Fatal("run 2 kept none of its own checkpoints")
	}
	if left, _ := storage.ListAll(ctx, store, first+"/"); !slices.ContainsFunc(all, func(m storage.Metadata) bool { return m.JobID == first }) && len(left) > 0 {
		t.Errorf("run 1 has no retained checkpoint but left %v", left)
	}
	for _, key := range []string{storage.CheckpointPrefix("other", 1) + "op-0-keyed", storage.JobInfoKey("other"),
		storage.CheckpointPrefix("unnamed", 1) + "op-0-keyed", storage.MetadataKey("unreadable", 1), storage.SharedKey("unreadable", "x.sst")} {
		if _, err := store.Get(ctx, key); err != nil {
			t.Errorf("%s of another job was touched: %v", key, err)
		}
	}
}

// A savepoint that fails leaves no folder in its target directory.
func TestFailedSavepointLeavesNoFolder(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeInput(t, in, r, 20000, 40)
	target := filepath.Join(dir, "sps")
	undo := storage.Intercept("file://"+filepath.ToSlash(target), func(s *storage.Store) *storage.Store {
		return storage.WithFaults(s, func(op, key string) (time.Duration, error) {
			if op == storage.OpWrite {
				return 0, fmt.Errorf("%w: disk full (test)", storage.ErrInjected)
			}
			return 0, nil
		})
	})
	defer undo()
	cfg := weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
		Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints")}}
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 2000}), filepath.Join(dir, "out"), keyedcount.Format).UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel()
		job.Wait(context.Background())
	}()
	c := rest.NewClient(job.RESTAddr(), nil)
	waitAllRunning(t, c, job.ID())
	rid, err := c.TriggerSavepoint(context.Background(), job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitSavepoint(t, c, job.ID(), rid); err == nil {
		t.Fatal("a savepoint that cannot be written succeeded")
	}
	// The folder goes in the background, right after the failure.
	var entries []os.DirEntry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if entries, _ = os.ReadDir(target); len(entries) == 0 {
			return
		}
	}
	t.Fatalf("the failed savepoint left %v in %s", entries, target)
}

// While the job runs, a shared file no checkpoint references (as a task's
// upload for an aborted checkpoint leaves) and a checkpoint directory a
// late upload recreated after its checkpoint was discarded are deleted
// within a few rounds of sweeping (a second or so each), not only when the
// job ends.
func TestRunningJobSweepsLeftovers(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	want := writeInput(t, in, r, 20000, 200)
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{
		Interval: 30 * time.Millisecond, Dir: ck, Incremental: true, Retained: 1}}
	var job string
	var planted []string
	left := map[int64][]string{} // checkpoint id -> planted files still there when it completed
	cfg.OnSubmit = func(j *weir.Job) { job = j.ID() }
	newest := int64(0)
	cfg.OnCheckpoint = func(id int64, _ bool) { // under the JobManager's lock: quick
		newest = max(newest, id)
		if id == 3 {
			planted = []string{filepath.Join(ck, job, storage.SharedDir, "orphan.sst"), filepath.Join(ck, job, "chk-1", "late-upload")}
			for _, p := range planted {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte("x"), 0o644)
			}
		}
		for _, p := range planted {
			if _, err := os.Stat(p); err == nil {
				left[id] = append(left[id], p)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 4000, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines, want %d", len(got), len(want))
	}
	if len(left[3]) != len(planted) || len(planted) == 0 {
		t.Fatalf("the planted files were not there when checkpoint 3 completed: %v", left[3])
	}
	last := int64(0)
	for id := range left {
		last = max(last, id)
	}
	if newest <= last {
		t.Fatalf("%v still there when checkpoint %d completed (the last was %d)", left[last], last, newest)
	}
	t.Logf("the leftovers were gone when checkpoint %d completed", last+1)
}

// A run resumed from an older checkpoint of an earlier run keeps that
// checkpoint, beyond --retained, until one of its own completes (it may
// need it again to restart); the earlier run's newer ones that --retained
// does not keep go.
func TestResumeKeepsRestoredCheckpoint(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	writeInput(t, in, r, 8000, 200)
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{
		Interval: 30 * time.Millisecond, Dir: ck, Incremental: true, Retained: 3}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx1, stop := context.WithCancel(ctx)
	var done atomic.Int32
	first := ""
	c1 := cfg
	c1.OnSubmit = func(j *weir.Job) { first = j.ID() }
	c1.OnCheckpoint = func(int64, bool) {
		if done.Add(1) == 4 {
			stop()
		}
	}
	if err := keyedcount.Run(ctx1, keyedcount.Options{Input: in, Output: out, RatePerSecond: 4000, Config: c1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run 1: %v, want canceled", err)
	}
	store, err := storage.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ids, err := storage.Completed(ctx, store, first)
	if err != nil || len(ids) < 3 {
		t.Fatalf("run 1 left checkpoints %v (%v), want 3", ids, err)
	}
	oldest := ids[0]
	// Run 2: from the oldest, retaining 1, no checkpoint of its own
	// (interval of an hour), canceled after a while.
	c2 := cfg
	c2.Checkpointing = &weir.CheckpointConfig{Interval: time.Hour, Dir: ck, Incremental: true, Retained: 1}
	c2.ResumeFrom = filepath.Join(ck, first, storage.CheckpointDir(oldest))
	ctx2, stop2 := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer stop2()
	// Another output directory: the first one holds what run 1's newer
	// checkpoints committed, and the file sink refuses to write below that.
	if err := keyedcount.Run(ctx2, keyedcount.Options{Input: in, Output: filepath.Join(dir, "out2"), RatePerSecond: 4000, Config: c2}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run 2: %v, want the deadline", err)
	}
	left, err := storage.Completed(ctx, store, first)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{oldest, ids[len(ids)-1]}; !slices.Equal(left, want) {
		t.Fatalf("run 1's complete checkpoints after run 2: %v, want %v (the one restored from, the newest)", left, want)
	}
}
