package node

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/memory"
)

// TestProcessMemorySizes: a TaskManager's network and heap state memory
// default to their shares of its process memory, given ones are kept, and
// two given that exceed it are refused naming the flags.
func TestProcessMemorySizes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	const p = 1 << 30
	cfg := TaskManagerConfig{ProcessMemory: p}
	if _, err := processMemory(&cfg, log); err != nil {
		t.Fatal(err)
	}
	if cfg.NetworkMemory != memory.NetworkDefault(p) || cfg.HeapStateMemory != memory.HeapStateDefault(p) || cfg.HeapStateMemory == 0 {
		t.Fatalf("network %d, heap state %d; want the defaults of %d bytes of process memory", cfg.NetworkMemory, cfg.HeapStateMemory, p)
	}
	cfg = TaskManagerConfig{ProcessMemory: p, NetworkMemory: 64 << 20}
	if _, err := processMemory(&cfg, log); err != nil || cfg.NetworkMemory != 64<<20 {
		t.Fatalf("given network memory: %d, %v", cfg.NetworkMemory, err)
	}
	cfg = TaskManagerConfig{ProcessMemory: p, NetworkMemory: p / 2, HeapStateMemory: p}
	if _, err := processMemory(&cfg, log); err == nil || !strings.Contains(err.Error(), "--heap-state-memory") || !strings.Contains(err.Error(), "--process-memory") {
		t.Fatalf("network and heap state above the process memory: %v; want a refusal naming the flags", err)
	}
}
