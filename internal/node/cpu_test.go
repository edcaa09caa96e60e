package node

import (
	"log/slog"
	"os"
	"runtime"
	"testing"
)

// A TaskManager's GOMAXPROCS is taskmanager.cpu.cores rounded up, the
// slots by default, never above what Go chose at start; GOMAXPROCS in the
// environment wins.
func TestApplyCPUCores(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment, which wins")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	saved := goProcs
	defer func() { goProcs = saved }()
	goProcs = 8
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		cores float64
		slots int
		want  int
	}{{0, 1, 1}, {0, 3, 3}, {1.5, 1, 2}, {4, 1, 4}, {0, 64, 8}, {100, 1, 8}} {
		applyCPUCores(c.cores, c.slots, log)
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("cores %v, slots %d: GOMAXPROCS %d, want %d", c.cores, c.slots, got, c.want)
		}
	}
	for _, bad := range []float64{0, -1, 5000} {
		if CPUCores(bad) == nil {
			t.Errorf("CPUCores(%v) accepted", bad)
		}
	}
}
