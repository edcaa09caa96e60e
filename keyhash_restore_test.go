package weir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/checkpoint/inspect"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// bidKey is a key hashed from its memory: the key hash version decides its
// key group.
type bidKey struct{ Bidder, Auction int64 }

type bidCount struct {
	Key bidKey
	N   int64
}

type bidCounter struct{ n state.ValueState[int64] }

func (c *bidCounter) Open(ctx weir.KeyedRuntimeContext) error {
	c.n = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "n", Codec: codec.Int64()})
	return nil
}

func (c *bidCounter) ProcessElement(ctx weir.KeyedContext[bidKey], k bidKey, out weir.Collector[bidCount]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(bidCount{Key: k, N: n + 1})
	return nil
}

// runBidCount counts the input's (bidder, auction) lines per key (with
// the count of a resumed checkpoint, cfg.ResumeFrom) and returns the last
// count of each key. The source has a new UID in every run, and its old
// state is dropped, so that every run reads the whole input.
func runBidCount(t *testing.T, input, dir string, cfg weir.Config) map[bidKey]int64 {
	t.Helper()
	cfg.Checkpointing = &weir.CheckpointConfig{Interval: time.Hour, Dir: dir}
	cfg.AllowNonRestoredState = true
	env := weir.NewEnvironment(cfg)
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: input}, "lines").UID(fmt.Sprintf("lines-%d", time.Now().UnixNano()))
	keys := weir.Process(lines, weir.ProcessFunc[file.Line, bidKey](func(_ weir.Context, l file.Line, out weir.Collector[bidKey]) error {
		var k bidKey
		if _, err := fmt.Sscanf(l.Text, "%d %d", &k.Bidder, &k.Auction); err != nil {
			return fmt.Errorf("line %q: %w", l.Text, err)
		}
		out.Collect(k)
		return nil
	})).UID("parse")
	counts := weir.ProcessKeyed[bidKey, bidKey, bidCount](weir.KeyBy(keys, func(k bidKey) bidKey { return k }), &bidCounter{}).UID("count")
	got := weir.Collect(counts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "key-hash")
	if err != nil {
		t.Fatal(err)
	}
	last := map[bidKey]int64{}
	for c := range got.All() {
		last[c.Key] = max(last[c.Key], c.N)
	}
	if _, err := job.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return last
}

func latestMetadata(t *testing.T, dir string) (*storage.Store, *storage.Metadata) {
	t.Helper()
	s, err := storage.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := storage.Latest(context.Background(), s, "key-hash", nil)
	if err != nil || m == nil {
		t.Fatalf("latest checkpoint in %s: %v, %v", dir, m, err)
	}
	return s, m
}

// A checkpoint written before key hash versions were recorded (its
// metadata names none, and its key groups come from FNV-1a) resumes with
// every key finding its state, at another parallelism and on either
// backend; the resumed job's own checkpoints then name the old version, so
// a second resume finds the state too. A fresh job records the current
// version. Without the version, the struct keys' state would be looked up
// in other key groups (and subtasks), and the counts would start over.
func TestResumeKeepsKeyHashVersion(t *testing.T) {
	r := testseed.Rand(t, 0)
	path := filepath.Join(t.TempDir(), "bids.txt")
	var sb strings.Builder
	want := map[bidKey]int64{}
	for range 3000 {
		k := bidKey{1000 + r.Int64N(40), 2000 + r.Int64N(30)}
		want[k]++
		fmt.Fprintf(&sb, "%d %d\n", k.Bidder, k.Auction)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, run string, got map[bidKey]int64, times int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", run, len(got), len(want))
		}
		wrong := 0
		for k, n := range want {
			if got[k] != times*n {
				wrong++
			}
		}
		if wrong > 0 {
			t.Fatalf("%s: %d of %d keys have a count other than %d times their lines", run, wrong, len(want), times)
		}
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			jobmanager.SetFreshKeyHash(keygroup.HashFNV)
			got := runBidCount(t, path, dir, weir.Config{Parallelism: 2, StateBackend: backend})
			jobmanager.SetFreshKeyHash(0)
			check(t, "first run", got, 1)
			s, m := latestMetadata(t, dir)
			if m.KeyHash != keygroup.HashFNV {
				t.Fatalf("the first run's checkpoint names key hash %d, want %d", m.KeyHash, keygroup.HashFNV)
			}
			// Make it what a build before versions wrote: no version.
			m.KeyHash = 0
			if err := storage.WriteMetadata(context.Background(), s, *m); err != nil {
				t.Fatal(err)
			}
			// weir savepoint inspect tells the version a resume will use.
			r, err := inspect.Inspect(context.Background(), filepath.Join(dir, m.JobID, fmt.Sprintf("chk-%d", m.CheckpointID)))
			if err != nil {
				t.Fatal(err)
			}
			if r.KeyHash != int(keygroup.HashFNV) {
				t.Fatalf("inspect reports key hash %d for keyed state without a version, want %d", r.KeyHash, keygroup.HashFNV)
			}
			got = runBidCount(t, path, dir, weir.Config{Parallelism: 3, StateBackend: backend, ResumeFrom: "latest"})
			check(t, "resumed run", got, 2)
			if _, m2 := latestMetadata(t, dir); m2.CheckpointID == m.CheckpointID || m2.KeyHash != keygroup.HashFNV {
				t.Fatalf("the resumed run's checkpoint %d names key hash %d, want a new one naming %d", m2.CheckpointID, m2.KeyHash, keygroup.HashFNV)
			}
			got = runBidCount(t, path, dir, weir.Config{Parallelism: 1, StateBackend: backend, ResumeFrom: "latest"})
			check(t, "second resume", got, 3)

			fresh := t.TempDir()
			check(t, "fresh run", runBidCount(t, path, fresh, weir.Config{Parallelism: 2, StateBackend: backend}), 1)
			if _, m := latestMetadata(t, fresh); m.KeyHash != keygroup.CurrentHash {
				t.Fatalf("a fresh run's checkpoint names key hash %d, want %d", m.KeyHash, keygroup.CurrentHash)
			}
		})
	}
}
