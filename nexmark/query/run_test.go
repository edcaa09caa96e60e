package query_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark/query"
)

// TestRunCheckpointDirectories: a run with checkpoints and no checkpoint
// directory leaves nothing behind in the temporary directory; one given a
// directory keeps its last checkpoint there.
func TestRunCheckpointDirectories(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	q, err := query.Lookup("q1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	s, err := query.Run(context.Background(), q, query.Options{Config: cfg, Parallelism: 2, CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoints == 0 {
		t.Fatal("no checkpoint completed")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("a run without --checkpoint-dir left %d entries in the temporary directory (%s, ...)", len(left), left[0].Name())
	}
	dir := t.TempDir()
	if _, err := query.Run(context.Background(), q, query.Options{Config: cfg, Parallelism: 2, CheckpointInterval: 10 * time.Millisecond, CheckpointDir: dir}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadDir(dir); len(kept) == 0 {
		t.Fatal("a run with a checkpoint directory kept nothing in it")
	}
}
