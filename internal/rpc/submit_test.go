package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// startJobs serves jobs on a loopback port and returns its address.
func startJobs(t *testing.T, jobs *Jobs) string {
	t.Helper()
	return startServing(t, ServerConfig{Jobs: jobs})
}

// startServing serves cfg, with a JobManager that takes no TaskManager's
// session, on a loopback port and returns its address.
func startServing(t *testing.T, cfg ServerConfig) string {
	t.Helper()
	cfg.JobManager, cfg.Connected, cfg.Ended = fakeJM{newRecorder()}, func(Registration, *ServerSession) {}, func(SessionEnd) {}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return addr.String()
}

// TestSubmitJobReportsIDThenOutcome: the client learns the job's id once
// it is submitted, then its end with the error text and its class; the
// program and arguments arrive unchanged.
func TestSubmitJobReportsIDThenOutcome(t *testing.T) {
	release := make(chan struct{})
	var gotProgram string
	var gotArgs []string
	addr := startJobs(t, &Jobs{BuildID: "b1", RESTAddress: "127.0.0.1:8081",
		Outcome: func(err error) string { return "usage" },
		Run: func(ctx context.Context, program string, args []string, submitted func(string)) error {
			gotProgram, gotArgs = program, args
			submitted("job-1")
			<-release
			return errors.New("--window: bad")
		}})
	var progress []Submission
	done := make(chan struct{})
	var s Submission
	var err error
	go func() {
		defer close(done)
		s, err = SubmitJob(context.Background(), addr, "b1", "window-agg", []string{"--window=x", "--input=/a b"}, false,
			func(s Submission) { progress = append(progress, s); close(release) })
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) != 1 || progress[0].JobID != "job-1" || progress[0].RESTAddress != "127.0.0.1:8081" {
		t.Fatalf("progress %+v, want one update with job-1 and the REST address", progress)
	}
	if s.Err == nil || s.Err.Error() != "--window: bad" || s.Outcome != "usage" {
		t.Fatalf("outcome %v (%q), want --window: bad (usage)", s.Err, s.Outcome)
	}
	if gotProgram != "window-agg" || strings.Join(gotArgs, "|") != "--window=x|--input=/a b" {
		t.Fatalf("the JobManager ran %q %q", gotProgram, gotArgs)
	}
}

// TestSubmitJobOtherBuildRefused: a client of another build is refused,
// naming both builds, and nothing runs.
func TestSubmitJobOtherBuildRefused(t *testing.T) {
	ran := false
	addr := startJobs(t, &Jobs{BuildID: "b1", Outcome: func(error) string { return "failed" },
		Run: func(context.Context, string, []string, func(string)) error { ran = true; return nil }})
	_, err := SubmitJob(context.Background(), addr, "b2", "keyed-count", nil, false, nil)
	if err == nil || !strings.Contains(err.Error(), "b2") || !strings.Contains(err.Error(), "b1") || ran {
		t.Fatalf("err %v, ran %v: want a refusal naming b1 and b2, nothing run", err, ran)
	}
}

// TestSubmitJobClientGoneCancels: a client that goes away cancels its job
// unless it detached; a detached client returns once the job is submitted.
func TestSubmitJobClientGoneCancels(t *testing.T) {
	canceled := make(chan bool, 2)
	addr := startJobs(t, &Jobs{BuildID: "b", Outcome: func(error) string { return "canceled" },
		Run: func(ctx context.Context, _ string, _ []string, submitted func(string)) error {
			submitted("j")
			select {
			case <-ctx.Done():
				canceled <- true
			case <-time.After(3 * time.Second):
				canceled <- false
			}
			return ctx.Err()
		}})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := SubmitJob(ctx, addr, "b", "p", nil, false, func(Submission) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if !<-canceled {
		t.Fatal("the job was not canceled when its client went away")
	}
	s, err := SubmitJob(context.Background(), addr, "b", "p", nil, true, nil)
	if err != nil || s.JobID != "j" || s.Err != nil {
		t.Fatalf("detached: %+v, %v; want job j submitted", s, err)
	}
	if <-canceled {
		t.Fatal("a detached job was canceled when its client returned")
	}
}

// TestSubmitJobNoJobManager names the address and the flag.
func TestSubmitJobNoJobManager(t *testing.T) {
	_, err := SubmitJob(context.Background(), "127.0.0.1:1", "b", "p", nil, false, nil)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err %v, want one naming the address", err)
	}
}

// TestSubmitJobReattaches: an attached client whose JobManager hands its
// running job over (steps down: the call ends unavailable, no end told)
// follows the job at the next JobManager of its list (high availability)
// and returns the job's end from there; a JobManager that does not know
// the job ends the client at once, naming it; with one JobManager the loss
// is the error. (A JobManager killed outright breaks the call the same
// way: internal/cli's TestHALeaderKilled.)
func TestSubmitJobReattaches(t *testing.T) {
	outcome := func(error) string { return "failed" }
	handsOver := func(id string) func(context.Context, string, []string, func(string)) error {
		return func(ctx context.Context, _ string, _ []string, submitted func(string)) error {
			submitted(id)
			return fmt.Errorf("%w: canceled here", ErrHandedOver)
		}
	}
	attached := make(chan string, 4)
	addrB := startJobs(t, &Jobs{BuildID: "b", Outcome: outcome, Run: handsOver("x"), Attach: func(ctx context.Context, id string) error {
		attached <- id
		if id != "j1" {
			return fmt.Errorf("%w: job %s", ErrUnknownJob, id)
		}
		return errors.New("boom after the takeover")
	}})
	for _, c := range []struct {
		name, id, want string
		list           func(a string) string
	}{
		{"follows the job", "j1", "boom after the takeover", func(a string) string { return a + "," + addrB }},
		{"one JobManager", "j1", "lost the JobManager", func(a string) string { return a }},
		{"unknown to the leader", "j2", "does not follow it", func(a string) string { return a + "," + addrB }},
	} {
		addrA := startJobs(t, &Jobs{BuildID: "b", Outcome: outcome, Run: handsOver(c.id)})
		began := time.Now()
		var lost string
		s, err := SubmitJob(context.Background(), c.list(addrA), "b", "p", nil, false, func(s Submission) { lost += s.Lost })
		if want := map[bool]string{true: addrA}[strings.Contains(c.list(addrA), ",")]; lost != want {
			t.Errorf("%s: progress told the loss of %q, want %q", c.name, lost, want)
		}
		got := err
		if err == nil {
			got = s.Err
		}
		if got == nil || !strings.Contains(got.Error(), c.want) || !strings.Contains(got.Error()+s.JobID, c.id) || time.Since(began) > 5*time.Second {
			t.Errorf("%s: %+v, %v after %v; want job %s and at once %q", c.name, s, err, time.Since(began), c.id, c.want)
		}
	}
	if len(attached) != 2 || <-attached != "j1" || <-attached != "j2" {
		t.Fatalf("want re-attachments to j1, then j2")
	}
}
