package keyedcount_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// writeInput writes n random lines over k keys and returns the expected
// output lines, sorted.
func writeInput(t *testing.T, path string, r *rand.Rand, n, k int) []string {
	t.Helper()
	return writeInputFiles(t, []string{path}, r, n, k)
}

// writeInputFiles spreads n random lines over k keys across files. A key's
// lines are all in one file, so their order (and so each running count and
// sum) is the same however the files are read.
func writeInputFiles(t *testing.T, paths []string, r *rand.Rand, n, k int) []string {
	t.Helper()
	return writeWideInputFiles(t, paths, r, n, k, 0)
}

// writeWideInputFiles is writeInputFiles with keys padded to up to pad
// bytes, so that records span network buffers.
func writeWideInputFiles(t *testing.T, paths []string, r *rand.Rand, n, k, pad int) []string {
	t.Helper()
	bufs := make([]strings.Builder, len(paths))
	count, sum := map[string]int64{}, map[string]int64{}
	var want []string
	for range n {
		ki := r.IntN(k)
		key := fmt.Sprintf("k%d", ki)
		if pad > 0 {
			key += strings.Repeat("x", ki*7919%pad)
		}
		v := r.Int64N(2000) - 1000
		fmt.Fprintf(&bufs[ki%len(paths)], "%s\t%d\n", key, v)
		count[key]++
		sum[key] += v
		want = append(want, fmt.Sprintf("%s\t%d\t%d", key, count[key], sum[key]))
	}
	for i, p := range paths {
		if err := os.WriteFile(p, []byte(bufs[i].String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	return want
}

// committed reads the committed output lines (files not starting with . or _), sorted.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

func TestKeyedCountWithCheckpoints(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
	want := writeInput(t, in, r, 5000, 50)
	for _, backend := range []string{"hashmap", "pebble"} {
		os.RemoveAll(out)
		cfg := weir.Config{Parallelism: 3, StateBackend: backend, Checkpointing: &weir.CheckpointConfig{
			Interval: 50 * time.Millisecond, Dir: filepath.Join(dir, "checkpoints-"+backend)}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 20000, Config: cfg})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if got := committed(t, out); !slices.Equal(got, want) {
			t.Fatalf("%s: %d committed lines, want %d", backend, len(got), len(want))
		}
	}
}

// At-least-once checkpoints (no alignment) complete and, without failures,
// change nothing in the output.
func TestKeyedCountAtLeastOnce(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
	want := writeInput(t, in, r, 4000, 30)
	completed := 0
	cfg := weir.Config{Parallelism: 3, Checkpointing: &weir.CheckpointConfig{Mode: weir.AtLeastOnce,
		Interval: 20 * time.Millisecond, Dir: filepath.Join(dir, "ck")},
		OnCheckpoint: func(int64, bool) { completed++ }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 10000, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines, want %d", len(got), len(want))
	}
	if completed < 5 {
		t.Fatalf("%d checkpoints completed, want several", completed)
	}
}
