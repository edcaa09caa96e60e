package keyedcount_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// wantAPIError checks that err is an answer with status and a message
// containing every one of parts.
func wantAPIError(t *testing.T, what string, err error, status int, parts ...string) {
	t.Helper()
	var ae *rest.APIError
	if !errors.As(err, &ae) || ae.Status != status {
		t.Fatalf("%s: got %v, want status %d", what, err, status)
	}
	for _, p := range parts {
		if !strings.Contains(ae.Error(), p) {
			t.Fatalf("%s: %q does not say %q", what, ae.Error(), p)
		}
	}
}

// Savepoint requests that cannot work are answered at once, saying what was
// wrong: no target directory and no default, one that cannot be written, a
// bad format, a second request while one is in progress, an unknown request
// id, a finished job. The /v1 prefix serves the same routes.
func TestSavepointRequestErrors(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeInput(t, in, r, 20000, 40)
	// Interval 0: no periodic checkpoints, savepoints still go through.
	cfg := weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
		Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints")}}
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 2000}), filepath.Join(dir, "out"), keyedcount.Format).UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel()
		job.Wait(context.Background())
	}()
	ctx := context.Background()
	c := rest.NewClient(job.RESTAddr(), nil)
	v1 := rest.NewClient("http://"+job.RESTAddr()+"/v1", nil)

	_, err = c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{})
	wantAPIError(t, "no target directory", err, http.StatusBadRequest, "no target directory", "state.savepoints.dir")
	blocker := filepath.Join(dir, "a-file")
	os.WriteFile(blocker, []byte("x"), 0o644)
	_, err = c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: filepath.Join(blocker, "sub")})
	wantAPIError(t, "unwritable target", err, http.StatusBadRequest, "cannot be written", blocker)
	_, err = c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: dir, FormatType: "SIDEWAYS"})
	wantAPIError(t, "bad format", err, http.StatusBadRequest, "formatType", "SIDEWAYS")
	_, err = c.SavepointStatus(ctx, job.ID(), "0123456789abcdef0123456789abcdef")
	wantAPIError(t, "unknown request", err, http.StatusNotFound, "no savepoint request")

	target := filepath.Join(dir, "sps")
	waitAllRunning(t, c, job.ID())
	rid, err := v1.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	if err != nil {
		t.Fatalf("trigger under /v1: %v", err)
	}
	_, err2 := c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	first, ferr := c.SavepointStatus(ctx, job.ID(), rid)
	switch {
	case ferr != nil:
		t.Fatal(ferr)
	case err2 != nil:
		wantAPIError(t, "second request", err2, http.StatusConflict, "in progress", rid)
	case first.Status.ID != rest.StatusCompleted:
		t.Fatalf("a second savepoint was accepted while %s is %s", rid, first.Status.ID)
	}
	if _, err := waitSavepoint(t, v1, job.ID(), rid); err != nil {
		t.Fatal(err)
	}

	// Stop; before its result is polled the (embedded) cluster stays up,
	// so the finished job can be asked for another savepoint.
	sid, err := c.StopWithSavepoint(ctx, job.ID(), rest.StopRequest{TargetDirectory: target})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := c.Job(ctx, job.ID())
		if err != nil {
			t.Fatal(err)
		}
		if d.State == protocol.JobFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped job is %s after 30 s", d.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	wantAPIError(t, "finished job", err, http.StatusConflict, "FINISHED", "only a running job")
	if _, err := waitSavepoint(t, c, job.ID(), sid); err != nil {
		t.Fatal(err)
	}
}

// A savepoint whose folder cannot be written to completes with a failure
// cause naming the store and the cause; the job keeps running, its
// checkpoints are not failed by it, and the next savepoint succeeds.
func TestSavepointWriteFailure(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeInput(t, in, r, 20000, 40)
	target := filepath.Join(dir, "sps")
	var failing atomic.Bool // read by the store's callers
	failing.Store(true)
	undo := storage.Intercept("file://"+filepath.ToSlash(target), func(s *storage.Store) *storage.Store {
		return storage.WithFaults(s, func(op, key string) (time.Duration, error) {
			if failing.Load() && op == storage.OpWrite {
				return 0, fmt.Errorf("%w: disk full (test)", storage.ErrInjected)
			}
			return 0, nil
		})
	})
	defer undo()
	cfg := weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
		Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints")}}
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 2000}), filepath.Join(dir, "out"), keyedcount.Format).UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel()
		job.Wait(context.Background())
	}()
	ctx := context.Background()
	c := rest.NewClient(job.RESTAddr(), nil)
	waitAllRunning(t, c, job.ID())
	rid, err := c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitSavepoint(t, c, job.ID(), rid); err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "sps") {
		t.Fatalf("a savepoint that cannot be written: %v", err)
	}
	failing.Store(false)
	rid, err = c.TriggerSavepoint(ctx, job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitSavepoint(t, c, job.ID(), rid); err != nil {
		t.Fatalf("the next savepoint: %v", err)
	}
	d, err := c.Job(ctx, job.ID())
	if err != nil || d.State != protocol.JobRunning {
		t.Fatalf("after a failed savepoint the job is %s (%v), want RUNNING", d.State, err)
	}
}

// "cancel-job": true takes the savepoint, then cancels the job (Flink's
// cancel-with-savepoint): the savepoint's location can still be read, and
// the job ends CANCELED.
func TestSavepointThenCancel(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeInput(t, in, r, 20000, 40)
	cfg := weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0", Checkpointing: &weir.CheckpointConfig{
		Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: filepath.Join(dir, "checkpoints")}}
	env := weir.NewEnvironment(cfg)
	weir.WriteFiles(keyedcount.Build(env, keyedcount.Options{Input: in, RatePerSecond: 2000}), filepath.Join(dir, "out"), keyedcount.Format).UID("sink")
	job, err := env.ExecuteAsync(context.Background(), "keyed-count")
	if err != nil {
		t.Fatal(err)
	}
	c := rest.NewClient(job.RESTAddr(), nil)
	waitAllRunning(t, c, job.ID())
	rid, err := c.TriggerSavepoint(context.Background(), job.ID(), rest.SavepointTriggerRequest{TargetDirectory: filepath.Join(dir, "sps"), CancelJob: true})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := waitSavepoint(t, c, job.ID(), rid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := job.Wait(ctx); !errors.Is(err, weir.ErrCanceled) {
		t.Fatalf("after cancel-job the job ended with %v, want canceled", err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(loc, "file://"), "_metadata")); err != nil {
		t.Fatal(err)
	}
}
