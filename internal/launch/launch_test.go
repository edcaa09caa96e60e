package launch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
)

// keyedAt returns the metadata of a checkpoint whose keyed operators were
// cut into the given max parallelisms (one operator each).
func keyedAt(mps ...int) *storage.Metadata {
	m := &storage.Metadata{CheckpointID: 7}
	for _, mp := range mps {
		m.Operators = append(m.Operators, storage.OperatorState{Name: "op", Parallelism: 1, MaxParallelism: mp,
			Subtasks: []storage.SubtaskState{{Keyed: []storage.KeyedHandle{{}}}}})
	}
	return m
}

// oneVertex is a job graph of one vertex at parallelism p, derived max
// parallelism jobMP; own is the max parallelism its operator sets (0: none).
func oneVertex(p, jobMP, own int) *graph.JobGraph {
	n := &graph.Node{Name: "keyed", MaxParallelism: own}
	return &graph.JobGraph{MaxParallelism: jobMP, Vertices: []*graph.Vertex{{Parallelism: p, Nodes: []*graph.Node{n}}}}
}

// TestRestoredMaxParallelism checks the resume rules against their
// statement: a job that sets no max parallelism adopts the one its
// restored keyed state was cut into, when the keyed operators agree and
// the vertices that take the job's fit under it; a vertex above it fails
// the resume, naming the setting.
func TestRestoredMaxParallelism(t *testing.T) {
	for _, c := range []struct {
		name       string
		m          *storage.Metadata
		jg         *graph.JobGraph
		adopt      int
		refuseName string // "" if the resume is allowed
	}{
		{"no keyed state", &storage.Metadata{Operators: []storage.OperatorState{{MaxParallelism: 256}}}, oneVertex(4, 128, 0), 0, ""},
		{"adopts the restored one", keyedAt(256), oneVertex(4, 128, 0), 256, ""},
		{"same as derived", keyedAt(128), oneVertex(4, 128, 0), 0, ""},
		{"operators disagree", keyedAt(128, 256), oneVertex(4, 128, 0), 0, ""},
		{"parallelism above it", keyedAt(2), oneVertex(4, 128, 0), 0, "keyed"},
		{"operator sets its own", keyedAt(2), oneVertex(4, 128, 8), 2, ""},
	} {
		if got := adoptedMaxParallelism(c.m, c.jg); got != c.adopt {
			t.Errorf("%s: adopted %d, want %d", c.name, got, c.adopt)
		}
		err := checkRestoredMaxParallelism(c.m, c.jg)
		switch {
		case c.refuseName == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refuseName != "" && (err == nil || !strings.Contains(err.Error(), `"`+c.refuseName+`" runs at parallelism 4, above the max parallelism 2 of checkpoint 7`) ||
			!strings.Contains(err.Error(), "--max-parallelism")):
			t.Errorf("%s: got %v, want a refusal naming %q and the flag", c.name, err, c.refuseName)
		}
	}
}

// TestStartRefusesBeforeRunning checks that Start's early refusals return
// the error the user sees and leave nothing behind: OnEnd (which ends the
// job's Collect sinks) is the caller's to run then, not Start's.
func TestStartRefusesBeforeRunning(t *testing.T) {
	base := Config{Name: "j", Graph: &graph.JobGraph{}, Logger: slog.New(slog.DiscardHandler), TaskManagers: 1, SlotsPerTaskManager: 1}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		edit func(*Config)
		want string
	}{
		{"canceled", canceled, func(*Config) {}, context.Canceled.Error()},
		{"heap state memory", context.Background(), func(c *Config) { c.HeapStateMemory = -1 },
			"weir: Config.HeapStateMemory is -1 bytes: want a positive number, or 0 for the default"},
		{"state backend", context.Background(), func(c *Config) { c.StateBackend = "rocksdb" },
			`weir: unknown state backend "rocksdb" (want hashmap or pebble)`},
		{"latest without checkpointing", context.Background(), func(c *Config) { c.ResumeFrom = "latest" },
			`weir: job "j": resuming from the latest checkpoint needs checkpointing (Config.Checkpointing)`},
	} {
		cfg := base
		ended := false
		cfg.OnEnd = func() { ended = true }
		c.edit(&cfg)
		j, err := Start(c.ctx, cfg)
		if j != nil || err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, %v; want the error %q", c.name, j, err, c.want)
		}
		if c.name == "canceled" && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v is not context.Canceled", c.name, err)
		}
		if ended {
			t.Errorf("%s: OnEnd ran for a job that never started", c.name)
		}
	}
}
