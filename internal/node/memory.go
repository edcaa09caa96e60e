package node

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/weirhq/weir/internal/memory"
)

// processMemory sizes a TaskManager process from its process memory (the
// given bytes, else the cgroup's limit or the machine's memory), as the
// embedded cluster sizes itself: network and heap state memory default to
// their shares of it, and the two set may not add up to more. It returns
// the sizes to use and a guard to run: the Go soft limit lowered to its
// share and, when the live heap stays above its bound over two garbage
// collections, exceeded called with an error naming the setting (the
// TaskManager then stops rather than be killed by the operating system).
func processMemory(cfg *TaskManagerConfig, logger *slog.Logger) (guard func(exceeded func(error)) (stop func()), err error) {
	setting := cmp.Or(cfg.MemorySetting, "--process-memory")
	p, from := cfg.ProcessMemory, cmp.Or(cfg.MemoryFrom, setting)
	if p == 0 {
		sz := memory.Detect()
		p, from = sz.Bytes, sz.From
	}
	if p > 0 {
		if cfg.NetworkMemory > 0 && cfg.HeapStateMemory > 0 && cfg.NetworkMemory+cfg.HeapStateMemory > p {
			return nil, fmt.Errorf("network memory %d bytes (--network-memory) plus heap state memory %d bytes (--heap-state-memory) is more than the process memory of %d bytes (%s, from %s): lower them, or raise the process memory",
				cfg.NetworkMemory, cfg.HeapStateMemory, p, setting, from)
		}
		if cfg.NetworkMemory <= 0 {
			cfg.NetworkMemory = memory.NetworkDefault(p)
		}
		if cfg.HeapStateMemory <= 0 {
			cfg.HeapStateMemory = memory.HeapStateDefault(p)
		}
	}
	if cfg.NetworkMemory <= 0 {
		cfg.NetworkMemory = taskmanagerNetworkMemory
	}
	logger.Info("TaskManager memory", "process_memory", p, "from", from, "network_memory", cfg.NetworkMemory,
		"heap_state_memory", cfg.HeapStateMemory)
	return func(exceeded func(error)) func() {
		if p <= 0 {
			return func() {}
		}
		return memory.Guard(p, func(s memory.Sample) {
			exceeded(memory.ExceededError(s, p, cmp.Or(cfg.MemorySetting, "weir taskmanager --process-memory")))
		})
	}, nil
}
