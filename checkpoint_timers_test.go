package weir_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

// Timers and keyed state come back from a checkpoint after a failure: each
// key's records arrive in one contiguous run, its only timer (at the end of
// time) is registered during that run, and the job fails once after a
// checkpoint has completed. Keys whose run ended before the checkpoint
// fire only if their timers were restored; every key must report exactly
// its count, once.
func TestTimersAndStateSurviveRestore(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 17))
	run := 20 + rng.Int64N(80) // records per key
	keys := 30 + rng.Int64N(30)
	n := run * keys
	for _, tc := range []struct {
		backend     string
		incremental bool // native Pebble checkpoints, timers in a file beside
	}{{"hashmap", false}, {"pebble", false}, {"pebble", true}} {
		backend := tc.backend
		t.Run(fmt.Sprintf("%s/incremental=%t", backend, tc.incremental), func(t *testing.T) {
			// The failure comes after a checkpoint whose barrier followed the
			// first quarter of the input (its trigger came after the previous
			// checkpoint completed, by then past that quarter): keys whose
			// run ended before have their timers only in the checkpoint.
			var checkpointed, failed atomic.Bool
			var restoredFrom, passed, armed atomic.Int64
			armed.Store(-1)
			env := weir.NewEnvironment(weir.Config{
				Parallelism: 2, StateBackend: backend, StateDir: t.TempDir(),
				Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir(), Incremental: tc.incremental},
				Restart: map[string]string{"restart-strategy.type": "fixed-delay",
					"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
				OnCheckpoint: func(id int64, _ bool) {
					if a := armed.Load(); a < 0 && passed.Load() >= n/4 {
						armed.Store(id + 1)
					} else if a > 0 && id >= a {
						checkpointed.Store(true)
					}
				},
				OnRestart: func(_ int, cp int64, _ error) { restoredFrom.Store(cp) },
			})
			// About a second of input, so that checkpoints complete mid-way.
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			src = weir.Map(src, func(i int64) int64 {
				passed.Store(i) // one subtask: indexes arrive in order
				if checkpointed.Load() && failed.CompareAndSwap(false, true) {
					panic(errors.New("injected failure"))
				}
				return i / run
			}).SetParallelism(1)
			keyed := weir.KeyBy(src, func(k int64) int64 { return k })
			got, err := weir.ExecuteAndCollect(context.Background(), env,
				weir.ProcessKeyed[int64, int64, tuple.T2[int64, int64]](keyed, &countAtEnd{}), "timers-restore")
			if err != nil {
				t.Fatal(err)
			}
			if !failed.Load() || restoredFrom.Load() < armed.Load() {
				t.Fatalf("the job did not fail after a checkpoint and restore from it (failed %v, restored checkpoint %d)",
					failed.Load(), restoredFrom.Load())
			}
			seen := map[int64]int64{}
			for _, kv := range got {
				if _, dup := seen[kv.F0]; dup {
					t.Fatalf("key %d reported twice", kv.F0)
				}
				seen[kv.F0] = kv.F1
			}
			for k := range keys {
				if seen[k] != run {
					t.Errorf("key %d: count %d, want %d (restored from checkpoint %d)", k, seen[k], run, restoredFrom.Load())
				}
			}
			if len(seen) != int(keys) {
				t.Errorf("%d keys reported, want %d", len(seen), keys)
			}
		})
	}
}
