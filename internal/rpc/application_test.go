package rpc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// startApplication serves app on a loopback port and returns its address.
func startApplication(t *testing.T, app *Application) string {
	t.Helper()
	return startServing(t, ServerConfig{Application: app})
}

// TestApplicationDescribesThenEnds: a TaskManager following the
// application gets its description at once, then its end (job id, status,
// error) when the JobManager finishes it; Drain returns once every
// follower was told.
func TestApplicationDescribesThenEnds(t *testing.T) {
	info := AppInfo{Name: "app", Args: []string{"-input", "in"}, Fingerprint: "f1", Config: "A=1\n", Digest: "d1"}
	app := NewApplication("b1", info)
	addr := startApplication(t, app)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := FollowApplication(ctx, addr, "b1", "tm-1", Backoff{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Info.Args, info.Args) || f.Info.Name != "app" || f.Info.Fingerprint != "f1" || f.Info.Config != "A=1\n" || f.Info.Digest != "d1" {
		t.Fatalf("got %+v, want %+v", f.Info, info)
	}
	ended := make(chan AppEnd, 1)
	go func() {
		e, err := f.End()
		if err != nil {
			t.Error(err)
		}
		ended <- e
	}()
	select {
	case e := <-ended:
		t.Fatalf("the end came before Finish: %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
	app.Finish(AppEnd{JobID: "j1", Status: "FAILED", Err: errors.New("boom")})
	app.Finish(AppEnd{Status: "FINISHED"}) // ignored
	e := <-ended
	if e.JobID != "j1" || e.Status != "FAILED" || e.Err == nil || e.Err.Error() != "boom" {
		t.Fatalf("end %+v, want j1 FAILED boom", e)
	}
	start := time.Now()
	app.Drain(5 * time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Drain took %v with no follower left", d)
	}
}

// TestApplicationRefusals: another build, and a JobManager in session
// mode, refuse at once (ErrRefused: no retry), naming why.
func TestApplicationRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := startApplication(t, NewApplication("b1", AppInfo{Name: "app"}))
	_, err := FollowApplication(ctx, addr, "b2", "tm-1", Backoff{}, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "build b2") || !strings.Contains(err.Error(), "build b1") {
		t.Fatalf("another build: got %v, want ErrRefused naming both builds", err)
	}
	session := startJobs(t, &Jobs{BuildID: "b1"})
	_, err = FollowApplication(ctx, session, "b1", "tm-1", Backoff{}, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "session mode") {
		t.Fatalf("session-mode JobManager: got %v, want ErrRefused naming session mode", err)
	}
}

// TestFollowApplicationWaitsForTheJobManager: nobody answers yet, so it
// retries until the registration timeout and says so.
func TestFollowApplicationWaitsForTheJobManager(t *testing.T) {
	start := time.Now()
	waited := 0
	_, err := FollowApplication(context.Background(), "127.0.0.1:1", "b1", "tm-1", Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond, Timeout: 300 * time.Millisecond},
		func(error) { waited++ })
	if waited != 1 {
		t.Errorf("told of the wait %d times, want once", waited)
	}
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "taskmanager.registration.timeout") {
		t.Fatalf("got %v, want a timeout naming taskmanager.registration.timeout", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", d)
	}
}
