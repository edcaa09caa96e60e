package weir_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// A run whose lineage lease another run takes stops completing checkpoints
// (so its sinks stop committing) and fails at once, without restarts, with
// an error that says so; while it holds the lease, a second run of the
// same job on the same checkpoint storage is refused.
func TestLeaseTakenFailsTheJob(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var completed, afterSteal atomic.Int64
	var stolen atomic.Bool
	cfg := func() weir.Config {
		return weir.Config{Parallelism: 2,
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: dir, LeaseTimeout: 3 * time.Second},
			OnCheckpoint: func(int64, bool) {
				completed.Add(1)
				if stolen.Load() {
					afterSteal.Add(1)
				}
			}}
	}
	env := weir.NewEnvironment(cfg())
	weir.Discard(weir.FromSource[int64, datagen.Split](env, datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }, RatePerSecond: 1000}, "gen").UID("gen"))
	job, err := env.ExecuteAsync(ctx, "leased")
	if err != nil {
		t.Fatal(err)
	}
	for completed.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	env2 := weir.NewEnvironment(cfg())
	weir.Discard(weir.FromSource[int64, datagen.Split](env2, datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}, "gen").UID("gen"))
	var held *storage.LeaseHeldError
	if _, err := env2.Execute(ctx, "leased"); !errors.As(err, &held) || held.Holder.Owner != job.ID() {
		t.Fatalf("a second run while the first holds the lease: %v", err)
	}
	// Another run, elsewhere, whose clock says the lease expired, takes it.
	s, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	future := func() time.Time { return time.Now().Add(time.Minute) }
	if _, err := storage.AcquireLease(ctx, s, "leased", storage.LeaseInfo{Owner: "thief", Host: "elsewhere", PID: 1}, time.Minute, future); err != nil {
		t.Fatal(err)
	}
	stolen.Store(true)
	select {
	case <-job.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the job kept running after its lease was taken")
	}
	_, err = job.Wait(ctx)
	if !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("job ended with %v, want the lost lease", err)
	}
	// A checkpoint whose metadata write began before the steal may still
	// complete; none after it.
	if n := afterSteal.Load(); n > 1 {
		t.Fatalf("%d checkpoints completed after the lease was taken", n)
	}
}
