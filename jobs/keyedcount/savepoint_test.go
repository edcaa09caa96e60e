package keyedcount_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// waitAllRunning waits until every task of the job runs.
func waitAllRunning(t *testing.T, c *rest.Client, jobID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitAllRunning(ctx, jobID); err != nil {
		t.Fatal(err)
	}
}

// waitSavepoint polls a savepoint request until it completes and returns
// the savepoint's location.
func waitSavepoint(t *testing.T, c *rest.Client, jobID, rid string) (string, error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := c.SavepointStatus(context.Background(), jobID, rid)
		if err != nil {
			t.Fatalf("polling savepoint %s: %v", rid, err)
		}
		if res.Status.ID == rest.StatusCompleted {
			if res.Operation == nil {
				t.Fatalf("completed savepoint %s without an operation", rid)
			}
			if fc := res.Operation.FailureCause; fc != nil {
				return "", errors.New(fc.StackTrace)
			}
			return res.Operation.Location, nil
		}
		if res.Status.ID != rest.StatusInProgress || res.Operation != nil {
			t.Fatalf("savepoint %s: unexpected answer %+v", rid, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("savepoint %s did not complete within a minute", rid)
	return "", nil
}

// runUntilSavepoint runs keyed-count, takes a savepoint after a random
// delay through the REST API, then cancels the job (no periodic checkpoint
// commits anything: the interval is an hour) and returns the savepoint's
// location.
func runUntilSavepoint(t *testing.T, r *rand.Rand, in, out, target string, cfg weir.Config, format string) string {
	t.Helper()
	cfg.RESTAddr = "127.0.0.1:0"
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 4000}), out, keyedcount.Format).Name("Committed counts").UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel()
		job.Wait(context.Background())
	}()
	c := rest.NewClient(job.RESTAddr(), nil)
	waitAllRunning(t, c, job.ID())
	delay := time.Duration(50+r.IntN(600)) * time.Millisecond
	time.Sleep(delay)
	rid, err := c.TriggerSavepoint(context.Background(), job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target, FormatType: format})
	if err != nil {
		t.Fatalf("triggering a savepoint: %v", err)
	}
	if len(rid) != 32 {
		t.Fatalf("request id %q is not 32 hex characters", rid)
	}
	loc, err := waitSavepoint(t, c, job.ID(), rid)
	if err != nil {
		t.Fatalf("savepoint failed: %v", err)
	}
	if err := job.Cancel(); err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(context.Background()); !errors.Is(err, weir.ErrCanceled) {
		t.Fatalf("after cancel: %v", err)
	}
	t.Logf("savepoint after %v at %s", delay, loc)
	return loc
}

// A savepoint taken at one parallelism and backend restores at another
// parallelism and into the other backend (canonical format), and the
// committed output equals the reference (an uninterrupted run's).
func TestSavepointRescaleAndSwitchBackend(t *testing.T) {
	cases := []struct {
		name                   string
		fromP, toP             int
		fromBackend, toBackend string
		incremental            bool
	}{
		{"p2-heap-to-p3-pebble", 2, 3, "hashmap", "pebble", false},
		// Incremental Pebble checkpoints reference shared/ files; the
		// canonical savepoint must not.
		{"p4-pebble-to-p1-heap", 4, 1, "pebble", "hashmap", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := testseed.Rand(t, uint64(i))
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
			want := writeInput(t, in, r, 4000, 40)
			cfg := weir.Config{Parallelism: tc.fromP, StateBackend: tc.fromBackend, Checkpointing: &weir.CheckpointConfig{
				Interval: time.Hour, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints"), Incremental: tc.incremental}}
			loc := runUntilSavepoint(t, r, in, out, filepath.Join(dir, "savepoints"), cfg, "")
			if n := len(committed(t, out)); n != 0 {
				t.Fatalf("%d lines committed before the resume; the test needs none (no periodic checkpoint)", n)
			}
			assertSelfContained(t, loc)
			cfg.Parallelism, cfg.StateBackend, cfg.ResumeFrom = tc.toP, tc.toBackend, loc
			cfg.Checkpointing = &weir.CheckpointConfig{Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints2")}
			resumed := ""
			cfg.OnSubmit = func(j *weir.Job) { resumed = j.RestoredFrom() }
			if err := keyedcount.Run(context.Background(), keyedcount.Options{Input: in, Output: out, RatePerSecond: 20000, Config: cfg}); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			if resumed == "" {
				t.Fatalf("the resumed run did not restore from %s", loc)
			}
			if got := committed(t, out); !slices.Equal(got, want) {
				onlyGot, onlyWant := diff(got, want)
				t.Fatalf("%d committed lines, want %d; only in output: %d (%s), only in reference: %d (%s)",
					len(got), len(want), len(onlyGot), first(onlyGot), len(onlyWant), first(onlyWant))
			}
		})
	}
}

// assertSelfContained checks that the savepoint folder holds its _metadata
// and that no file of it is outside it (nothing under shared/ of the
// checkpoint storage is named: every key in the metadata resolves in the
// folder).
func assertSelfContained(t *testing.T, loc string) {
	t.Helper()
	path := strings.TrimPrefix(loc, "file://")
	if _, err := os.Stat(filepath.Join(path, "_metadata")); err != nil {
		t.Fatalf("savepoint %s: %v", loc, err)
	}
	if !strings.HasPrefix(filepath.Base(path), "savepoint-") {
		t.Fatalf("savepoint folder %s is not named savepoint-...", path)
	}
	st, m, err := storage.Resolve(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !m.Savepoint {
		t.Fatalf("%s: metadata not marked as a savepoint", loc)
	}
	keyed := 0
	for _, op := range m.Operators {
		for _, s := range op.Subtasks {
			for _, kh := range s.Keyed {
				keyed++
				if kh.Kind != storage.KindCanonical || len(kh.Files) > 0 {
					t.Fatalf("%s: operator %s holds %s keyed state, want canonical", loc, op.Name, kh.Kind)
				}
				if _, err := os.Stat(filepath.Join(path, filepath.FromSlash(kh.Object.Key))); err != nil {
					t.Fatalf("%s: keyed state %q is not in the folder: %v", loc, kh.Object.Key, err)
				}
			}
		}
	}
	if keyed == 0 {
		t.Fatalf("%s: no keyed state at all", loc)
	}
}

// A savepoint folder moved to another directory (and renamed), and copied
// into an object store, restores.
func TestSavepointMoved(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
	want := writeInput(t, in, r, 3000, 30)
	cfg := weir.Config{Parallelism: 2, StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{
		Interval: time.Hour, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints"), Incremental: true}}
	loc := runUntilSavepoint(t, r, in, out, filepath.Join(dir, "savepoints"), cfg, rest.FormatNative)
	moved := filepath.Join(dir, "elsewhere", "my-savepoint")
	if err := os.MkdirAll(filepath.Dir(moved), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(strings.TrimPrefix(loc, "file://"), moved); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "checkpoints")) // nothing may be needed from there
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	if err := backend.CreateBucket("savepoints"); err != nil {
		t.Fatal(err)
	}
	s3URL := fmt.Sprintf("s3://savepoints/moved/sp1?endpoint=%s&region=us-east-1&use_path_style=true&anonymous=true", srv.URL)
	memURL := fmt.Sprintf("mem://savepoint-moved-%d/a/b", r.Uint64())
	for _, from := range []string{moved, copyToStore(t, moved, memURL), copyToStore(t, moved, s3URL)} {
		outN := out + "-" + fmt.Sprint(len(from))
		copyDir(t, out, outN)
		cfg := cfg
		cfg.Parallelism, cfg.ResumeFrom = 3, from
		cfg.Checkpointing = &weir.CheckpointConfig{Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints-"+fmt.Sprint(len(from)))}
		if err := keyedcount.Run(context.Background(), keyedcount.Options{Input: in, Output: outN, RatePerSecond: 20000, Config: cfg}); err != nil {
			t.Fatalf("resumed from %s: %v", from, err)
		}
		if got := committed(t, outN); !slices.Equal(got, want) {
			t.Fatalf("resumed from %s: %d committed lines, want %d", from, len(got), len(want))
		}
	}
}

// copyToStore copies the folder dir into the store at url and returns url.
func copyToStore(t *testing.T, dir, url string) string {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return st.Put(ctx, filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o777); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o666); err != nil {
			t.Fatal(err)
		}
	}
}
