package launch

import (
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/memory"
)

// guardMemory, for a known ProcessMemory, lowers the Go runtime's soft
// limit to its share and starts the guard that fails the job (permanently:
// a restart would rebuild the same heap) when the live heap stays above
// its bound; the returned function stops the guard and restores the limit.
// It logs what was chosen and from where.
func guardMemory(cfg Config, job string, fail func(error)) (end func()) {
	p := cfg.ProcessMemory
	if p <= 0 {
		cfg.Logger.Info("process memory unknown (no cgroup limit, no /proc/meminfo; set Config.ProcessMemory or --process-memory): no soft limit, no memory guard",
			"job", job, "network_memory", cfg.NetworkMemory, "heap_state_memory", cfg.HeapStateMemory)
		return func() {}
	}
	cfg.Logger.Info("process memory", "job", job, "bytes", p, "from", cfg.MemoryFrom,
		"go_soft_limit", memory.SoftLimit(p), "guard_live_heap_bound", memory.GuardBound(p),
		"network_memory", cfg.NetworkMemory, "heap_state_memory", cfg.HeapStateMemory)
	return memory.Guard(p, func(s memory.Sample) {
		cfg.Logger.Warn("memory guard: failing the job", "job", job, "live_heap", s.LiveHeap, "stacks", s.Stacks,
			"gc_cycles", s.Cycles, "bound", memory.GuardBound(p), "process_memory", p)
		fail(failure.Permanent(memory.ExceededError(s, p, "Config.ProcessMemory, weir run --process-memory")))
	})
}
