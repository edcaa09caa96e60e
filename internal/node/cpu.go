package node

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
)

// A TaskManager's cores (Flink's taskmanager.cpu.cores, which defaults to
// the number of slots): Go's scheduler runs at most that many goroutines
// at once (GOMAXPROCS). A slot is meant to have a core of its own, as in
// Flink ("one slot per core"), and a TaskManager given more Ps than it
// uses spins and preempts the other processes of its host: two one-slot
// TaskManagers on two cores spent 20 % more CPU per event with Go's
// default of every core (docs/benchmarks.md, issue 36). Inside a
// container Go already takes the CPU limit; GOMAXPROCS in the environment
// wins over both.

// goProcs is the GOMAXPROCS Go chose at start (the machine's CPUs, or the
// container's limit): a TaskManager never takes more.
var goProcs = runtime.GOMAXPROCS(0)

// KeyCPUCores is the setting's name.
const KeyCPUCores = "taskmanager.cpu.cores"

// CPUCores checks a taskmanager.cpu.cores value: a positive number of
// cores (fractions round up to whole Ps).
func CPUCores(v float64) error {
	if !(v > 0) || v > 4096 {
		return fmt.Errorf("%s=%v: want a positive number of cores, at most 4096", KeyCPUCores, v)
	}
	return nil
}

// applyCPUCores sets GOMAXPROCS for a TaskManager of slots slots given
// cores (0: the slots), unless the environment sets GOMAXPROCS; it never
// raises it above what Go chose (the machine's or the container's CPUs).
func applyCPUCores(cores float64, slots int, log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		log.Info("TaskManager cores", "gomaxprocs", runtime.GOMAXPROCS(0), "from", "GOMAXPROCS")
		return
	}
	from := KeyCPUCores
	if cores == 0 {
		cores, from = float64(slots), KeyCPUCores+" (the number of slots)"
	}
	procs := min(int(math.Ceil(cores)), goProcs)
	runtime.GOMAXPROCS(procs)
	log.Info("TaskManager cores", "gomaxprocs", procs, "from", from)
}
