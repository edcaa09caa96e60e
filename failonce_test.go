package weir_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// failOnce injects one failure into a job of n input elements: after a
// checkpoint that completed once a third of the input passed, the next
// element panics; the job restarts from a checkpoint. The failure tests of
// windows and joins share it.
type failOnce struct {
	n                           int64
	passed, armed, restoredFrom atomic.Int64
	checkpointed, failed        atomic.Bool
}

func newFailOnce(n int64) *failOnce {
	f := &failOnce{n: n}
	f.armed.Store(-1)
	return f
}

// config is the job's configuration: parallelism 3 on backend, a
// checkpoint every 20 ms, fixed-delay restarts, and the hooks that arm the
// failure and note the checkpoint restored.
func (f *failOnce) config(t *testing.T, backend string) weir.Config {
	return weir.Config{
		Parallelism: 3, StateBackend: backend, StateDir: t.TempDir(),
		Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
		Restart: map[string]string{"restart-strategy.type": "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
		OnCheckpoint: func(id int64, _ bool) {
			if a := f.armed.Load(); a < 0 && f.passed.Load() >= f.n/3 {
				f.armed.Store(id + 1)
			} else if a > 0 && id >= a {
				f.checkpointed.Store(true)
			}
		},
		OnRestart: func(_ int, cp int64, _ error) { f.restoredFrom.Store(cp) },
	}
}

// pass notes that element i passed, and panics in the first element after
// the armed checkpoint.
func (f *failOnce) pass(i int64) {
	f.passed.Store(i)
	if f.checkpointed.Load() && f.failed.CompareAndSwap(false, true) {
		panic(errors.New("injected failure"))
	}
}

// check fails t unless the job failed and restarted from the armed
// checkpoint or a later one.
func (f *failOnce) check(t *testing.T) {
	t.Helper()
	if !f.failed.Load() || f.restoredFrom.Load() < f.armed.Load() {
		t.Fatalf("the job did not fail after a checkpoint and restore from it (failed %v, restored checkpoint %d)",
			f.failed.Load(), f.restoredFrom.Load())
	}
}
