package inspect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/inspect"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// writeInput writes n random key<TAB>value lines over up to keys keys and
// returns the number of distinct keys: the reference the inspected keyed
// state is checked against.
func writeInput(t *testing.T, path string, n, keys int) int {
	t.Helper()
	r := testseed.Rand(t, 0)
	distinct := map[string]bool{}
	var b strings.Builder
	for range n {
		k := fmt.Sprintf("key-%d", r.IntN(keys))
		distinct[k] = true
		fmt.Fprintf(&b, "%s\t%d\n", k, r.IntN(1000)-500)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return len(distinct)
}

// latestCheckpoint returns the path of the newest complete checkpoint in ck.
func latestCheckpoint(t *testing.T, ck string) string {
	t.Helper()
	ctx := context.Background()
	store, err := storage.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	jobs, _ := os.ReadDir(ck)
	jobs = slices.DeleteFunc(jobs, func(e os.DirEntry) bool { return e.Name() == storage.LeasePrefix })
	if len(jobs) != 1 {
		t.Fatalf("%d job directories in %s", len(jobs), ck)
	}
	ids, err := storage.Completed(ctx, store, jobs[0].Name())
	if err != nil || len(ids) == 0 {
		t.Fatalf("no complete checkpoint (%v)", err)
	}
	return filepath.Join(ck, storage.CheckpointPrefix(jobs[0].Name(), ids[len(ids)-1]))
}

// RunKeyedCount runs keyed-count to its end at parallelism 2 and returns
// its last checkpoint and the distinct keys of its input.
func runKeyedCount(t *testing.T, cfg weir.Config) (string, int) {
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	keys := writeInput(t, in, 3000, 500)
	cfg.Parallelism = 2
	if cfg.Checkpointing == nil {
		cfg.Checkpointing = &weir.CheckpointConfig{}
	}
	cfg.Checkpointing.Dir, cfg.Checkpointing.Interval = ck, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return latestCheckpoint(t, ck), keys
}

func operatorByUID(t *testing.T, r *inspect.Report, uid string) inspect.Operator {
	t.Helper()
	for _, op := range r.Operators {
		if op.UID == uid {
			return op
		}
	}
	t.Fatalf("no operator with uid %q in the report: %+v", uid, r.Operators)
	return inspect.Operator{}
}

// The key-group ranges of an operator at parallelism p cover every key
// group exactly once.
func checkRanges(t *testing.T, op inspect.Operator) {
	t.Helper()
	covered := make([]int, op.MaxParallelism)
	for _, kr := range op.KeyedRanges {
		for kg := kr.KeyGroupStart; kg <= kr.KeyGroupEnd; kg++ {
			covered[kg]++
		}
	}
	for kg, n := range covered {
		if n != 1 {
			t.Fatalf("key group %d is in %d ranges: %+v", kg, n, op.KeyedRanges)
		}
	}
}

func TestInspectCanonical(t *testing.T) {
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			path, keys := runKeyedCount(t, weir.Config{StateBackend: backend})
			r, err := inspect.Inspect(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if r.JobName != "keyed-count" || r.CheckpointID < 1 {
				t.Errorf("job %q checkpoint %d", r.JobName, r.CheckpointID)
			}
			if r.KeyHash != int(keygroup.CurrentHash) {
				t.Errorf("key hash version %d, want %d", r.KeyHash, keygroup.CurrentHash)
			}
			count := operatorByUID(t, r, "count")
			if count.Name != "Count" || count.Parallelism != 2 || count.MaxParallelism != 128 || len(count.OperatorID) != 32 {
				t.Errorf("count operator %+v", count)
			}
			checkRanges(t, count)
			var found bool
			for _, ks := range count.KeyedStates {
				if ks.Name == "count-sum" {
					found = true
					// One value per key: keys and entries both equal the
					// input's distinct keys.
					if ks.Kind != "value" || ks.Keys != int64(keys) || ks.Entries != int64(keys) || ks.Bytes <= 0 || ks.Codec != "tuple.T2[int64,int64]" {
						t.Errorf("count-sum: %+v, want value state with %d keys and entries", ks, keys)
					}
					if want := "tuple.T2[int64,int64]{F0 int64; F1 int64}"; ks.Schema != want {
						t.Errorf("count-sum schema %q, want %q", ks.Schema, want)
					}
				}
			}
			if !found {
				t.Errorf("no count-sum state: %+v", count.KeyedStates)
			}
			// The final checkpoint holds the sink's last part files,
			// committed only once it completes.
			sink := operatorByUID(t, r, "sink")
			if len(sink.PendingCommits) == 0 {
				t.Errorf("sink has no pending commits: %+v", sink)
			}
			for _, pc := range sink.PendingCommits {
				if pc.Checkpoint != r.CheckpointID {
					t.Errorf("pending commit %+v prepared at another checkpoint than the final %d", pc, r.CheckpointID)
				}
			}
			if src := operatorByUID(t, r, "lines"); src.CoordinatorBytes == 0 {
				t.Errorf("source without enumerator state: %+v", src)
			}
		})
	}
}

// Native Pebble checkpoints are downloaded and read with Pebble: keys and
// records per state, checked against the input's distinct keys.
func TestInspectNative(t *testing.T) {
	path, keys := runKeyedCount(t, weir.Config{StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{Incremental: true}})
	r, err := inspect.Inspect(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	count := operatorByUID(t, r, "count")
	checkRanges(t, count)
	for _, kr := range count.KeyedRanges {
		if kr.Format != "native" || kr.Files == 0 || kr.Bytes == 0 {
			t.Errorf("range %+v: want native files", kr)
		}
	}
	found := false
	for _, ks := range count.KeyedStates {
		if ks.Name == "count-sum" {
			found = true
			// A value state is one Pebble record per key.
			if !ks.Native || ks.Keys != int64(keys) || ks.Entries != int64(keys) || ks.Codec != "tuple.T2[int64,int64]" {
				t.Errorf("count-sum from native files: %+v, want %d keys and records", ks, keys)
			}
			if want := "tuple.T2[int64,int64]{F0 int64; F1 int64}"; ks.Schema != want {
				t.Errorf("count-sum schema from native files %q, want %q", ks.Schema, want)
			}
		}
	}
	if !found {
		t.Errorf("no count-sum state in the native checkpoint: %+v", count.KeyedStates)
	}
	var b strings.Builder
	if err := inspect.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "schema tuple.T2[int64,int64]{F0 int64; F1 int64}") {
		t.Errorf("text does not print the schema:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "Pebble records") {
		t.Errorf("text does not say native counts are Pebble records:\n%s", b.String())
	}
}

// A checkpoint taken while the source is reading holds its split.
func TestInspectMidRunSourceSplits(t *testing.T) {
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	writeInput(t, in, 20000, 100)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := weir.Config{Parallelism: 1, Checkpointing: &weir.CheckpointConfig{Dir: ck, Interval: 50 * time.Millisecond}}
	cfg.OnCheckpoint = func(int64, bool) { cancel() }
	err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 5000, Config: cfg})
	if err == nil {
		t.Fatal("the job ended before a checkpoint completed; the test proves nothing")
	}
	r, err := inspect.Inspect(context.Background(), latestCheckpoint(t, ck))
	if err != nil {
		t.Fatal(err)
	}
	if src := operatorByUID(t, r, "lines"); src.SourceSplits != 1 {
		t.Errorf("source holds %d splits mid-run, want 1 (one file): %+v", src.SourceSplits, src)
	}
}

// Bad input names the file.
func TestInspectBadInput(t *testing.T) {
	path, _ := runKeyedCount(t, weir.Config{})
	meta := filepath.Join(path, storage.MetadataName)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// A damaged snapshot file: the error names it.
	var snap string
	filepath.Walk(path, func(p string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() && p != meta && snap == "" && strings.Contains(p, "keyed") {
			snap = p
		}
		return nil
	})
	if snap == "" {
		entries, _ := os.ReadDir(path)
		t.Fatalf("no keyed snapshot file under %s: %v", path, entries)
	}
	data, _ := os.ReadFile(snap)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(snap, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := inspect.Inspect(context.Background(), path); err == nil || !strings.Contains(err.Error(), filepath.Base(snap)) {
		t.Errorf("damaged snapshot: error %v does not name %s", err, filepath.Base(snap))
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := inspect.Inspect(context.Background(), path); err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Errorf("corrupt metadata: error %v", err)
	}
}
