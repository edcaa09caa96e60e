package keyedcount_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// Incremental Pebble checkpoints upload only new files: later checkpoints
// refer to files earlier ones uploaded under shared/, and a shared file is
// deleted once no retained checkpoint refers to it. After the job, every
// shared file left is one the retained checkpoint needs.
func TestIncrementalPebbleCheckpoints(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	want := writeInput(t, in, r, 20000, 2000)
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{
		Interval: 30 * time.Millisecond, Dir: ck, Incremental: true, Retained: 2}}
	// A shared file no checkpoint references, as an aborted checkpoint's
	// upload leaves: gone once the job has ended.
	orphan := ""
	cfg.OnSubmit = func(j *weir.Job) {
		orphan = filepath.Join(ck, j.ID(), storage.SharedDir, "orphan.sst")
		if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(orphan, []byte("x"), 0o644); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 20000, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines, want %d", len(got), len(want))
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the unreferenced shared file %s is left after the job (stat: %v)", orphan, err)
	}
	store, err := storage.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	jobs, _ := os.ReadDir(ck)
	jobs = slices.DeleteFunc(jobs, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "_") }) // the leases
	if len(jobs) != 1 {
		t.Fatalf("%d job directories", len(jobs))
	}
	job := jobs[0].Name()
	ids, err := storage.Completed(ctx, store, job)
	if err != nil || len(ids) == 0 || len(ids) > 2 {
		t.Fatalf("retained checkpoints %v (%v), want 1 or 2", ids, err)
	}
	needed := map[string]bool{}
	reused := 0
	for _, id := range ids {
		m, err := storage.ReadMetadata(ctx, store, job, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range m.SharedKeys() {
			needed[k] = true
		}
		for _, os := range m.Operators {
			for _, st := range os.Subtasks {
				for _, kh := range st.Keyed {
					if kh.Kind != storage.KindNative {
						t.Fatalf("checkpoint %d has a %s keyed snapshot, want native", id, kh.Kind)
					}
					for _, f := range kh.Files {
						if f.Shared && !strings.Contains(f.Object.Key, "/shared/") {
							t.Fatalf("shared file %s stored at %s", f.Name, f.Object.Key)
						}
					}
				}
			}
		}
	}
	shared, err := store.List(ctx, job+"/"+storage.SharedDir+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range shared {
		if !needed[k] {
			t.Errorf("shared file %s is left although no retained checkpoint needs it", k)
		}
	}
	for k := range needed {
		if !slices.Contains(shared, k) {
			t.Errorf("retained checkpoints need %s, which is gone", k)
		}
		reused++
	}
	t.Logf("checkpoints %v retained, %d shared files, all needed", ids, reused)
}
