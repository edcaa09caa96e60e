package weir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// TestFailoverOntoSpareTaskManager runs keyed-count with checkpoints on
// three one-slot TaskManagers at parallelism 2, so one is a spare, and
// loses one of the two holding its tasks at a random moment (seeded): the
// job restarts from its latest checkpoint on the one left and the spare,
// and its committed output is exactly the reference counts (per key n =
// 1..N once, with the right sums).
func TestFailoverOntoSpareTaskManager(t *testing.T) {
	r := testseed.Rand(t, 36)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "input"), filepath.Join(dir, "output")
	const n, keys = 6000, 40
	var b strings.Builder
	count, sum := map[string]int64{}, map[string]int64{}
	var want []string
	for range n {
		key := fmt.Sprintf("key-%d", r.IntN(keys))
		v := r.Int64N(1_000_000) - 500_000
		fmt.Fprintf(&b, "%s\t%d\n", key, v)
		count[key]++
		sum[key] += v
		want = append(want, fmt.Sprintf("%s\t%d\t%d", key, count[key], sum[key]))
	}
	slices.Sort(want)
	if err := os.WriteFile(input, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	lose := fmt.Sprintf("taskmanager-%d", r.IntN(2)) // each holds one job slot
	after := int64(2 + r.IntN(8))                    // completed checkpoints before the loss
	t.Logf("losing %s after %d checkpoints", lose, after)
	var completed atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var causes []string
	cfg := weir.Config{Parallelism: 2, TaskManagers: 3, SlotsPerTaskManager: 1, StateDir: t.TempDir(),
		Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
		Restart: map[string]string{"restart-strategy.type": "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
		OnCheckpoint: func(int64, bool) {
			if completed.Add(1) == after {
				once.Do(func() { close(reached) })
			}
		},
		OnRestart: func(_ int, _ int64, cause error) {
			mu.Lock()
			causes = append(causes, cause.Error())
			mu.Unlock()
		},
	}
	env := weir.NewEnvironment(cfg)
	counts := keyedcount.Build(env, keyedcount.Options{Input: input, Output: output, RatePerSecond: 5000})
	weir.WriteFiles(counts, output, keyedcount.Format).Name("Committed counts").UID("sink")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-job.Done():
		t.Fatalf("the job ended after %d checkpoints, before the loss", completed.Load())
	}
	time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
	if err := job.CrashTaskManager(lose, errors.New("its process is gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx); err != nil {
		t.Fatalf("the job failed after losing %s: %v", lose, err)
	}
	mu.Lock()
	wantCause := fmt.Sprintf("TaskManager %s lost: its process is gone", lose)
	if len(causes) != 1 || causes[0] != wantCause {
		t.Errorf("restarts caused by %q; want one, by %q", causes, wantCause)
	}
	mu.Unlock()
	got := readCommitted(t, output)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("committed output differs from the reference: %d lines, want %d; first difference %s", len(got), len(want), firstDiff(got, want))
	}
}
