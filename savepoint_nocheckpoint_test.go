package weir_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// awaitSavepoint triggers a savepoint of job into dir over its REST API and
// waits for its location.
func awaitSavepoint(t *testing.T, job *weir.Job, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := rest.NewClient(job.RESTAddr(), nil)
	rid, err := c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: dir})
	if err != nil {
		t.Fatalf("savepoint of a job without checkpointing: %v", err)
	}
	for {
		res, err := c.SavepointStatus(ctx, job.ID(), rid)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.ID == rest.StatusCompleted && res.Operation != nil {
			if fc := res.Operation.FailureCause; fc != nil {
				t.Fatalf("savepoint failed: %s", fc.StackTrace)
			}
			return res.Operation.Location
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A job without Config.Checkpointing takes a savepoint, as in Flink. Its file sink pre-commits at the savepoint's barrier
// and, taking no checkpoints, commits that with the rest when its input
// ends: the run's output holds every line once. A run resumed from the
// savepoint into another directory writes exactly the lines after it, so
// the savepoint's part and the resumed run's together are every line once.
func TestSavepointWithoutCheckpointing(t *testing.T) {
	r := testseed.Rand(t, 0)
	const n = 3000
	dir := t.TempDir()
	run := func(out, from string, rate float64) *weir.Job {
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", ResumeFrom: from})
		src := weir.Generate(env, n, rate, func(i int64) int64 { return i }).UID("numbers")
		weir.WriteFiles(src, out, func(v int64) string { return strconv.FormatInt(v, 10) }).UID("files")
		job, err := env.ExecuteAsync(context.Background(), "no-checkpoints")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { job.Cancel(); <-job.Done() })
		return job
	}
	out1 := filepath.Join(dir, "out1")
	job := run(out1, "", 3000)
	time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
	loc := awaitSavepoint(t, job, filepath.Join(dir, "sps"))
	if res, err := waitJob(t, job, 60*time.Second); err != nil || res.Status != "FINISHED" {
		t.Fatalf("the savepointed job: %+v, %v", res, err)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	got := readCommitted(t, out1)
	slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	if !slices.Equal(got, want) {
		t.Fatalf("the savepointed run committed %d lines, want %d (each of 0..%d once)", len(got), n, n-1)
	}
	// Resumed from the savepoint, the job commits what the savepoint
	// pre-committed (already committed by the run that went on: no
	// change) and writes what came after the savepoint again: a savepoint
	// of a job that went on is a fork (as in Flink).
	resumed := run(out1, loc, 0)
	if resumed.RestoredFrom() == "" {
		t.Fatalf("the run from %s restored nothing", loc)
	}
	if _, err := waitJob(t, resumed, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	all := readCommitted(t, out1)
	again := len(all) - n
	if again <= 0 || again >= n {
		t.Fatalf("the resumed run wrote %d lines; the savepoint came after none or all of %d", again, n)
	}
	seen := map[string]int{}
	for _, l := range all {
		seen[l]++
	}
	twice := 0
	for _, w := range want {
		switch seen[w] {
		case 1:
		case 2:
			twice++
		default:
			t.Fatalf("line %s: %d times, want once before the savepoint and twice after", w, seen[w])
		}
	}
	if twice != again {
		t.Fatalf("%d lines twice, but the resumed run wrote %d", twice, again)
	}
	n2 := n - again
	t.Logf("savepoint %s after %d of %d lines", loc, n2, n)
}
