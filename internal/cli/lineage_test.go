package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

var checkpointDone = regexp.MustCompile(`checkpoint (\d+) complete`)

// waitCheckpoints waits until pr has reported n completed checkpoints.
func waitCheckpoints(t *testing.T, pr *proc, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if len(checkpointDone.FindAllString(pr.stderr.String(), -1)) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fewer than %d checkpoints completed; stderr:\n%s", n, pr.stderr.String())
}

// Stop with a savepoint, then the README's resume (--from latest): the run
// resumes from the stop's savepoint, newer than the retained checkpoints,
// and the output holds every count exactly once (resuming from an older
// checkpoint would write what came after it twice).
func TestProcessStopThenResumeLatest(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, cps, sps := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "cps"), filepath.Join(dir, "sps")
	want := writeKeyedInput(t, in, r, 6000, 40)
	args := []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps, "--retained", "3",
		"--checkpoint-interval", "150ms", "--rate", "2000", "--parallelism", "2"}
	pr := startWeir(t, "", append(args, "--rest-address", "127.0.0.1:0")...)
	id, addr := waitStarted(t, pr)
	waitCheckpoints(t, pr, 3+r.IntN(3))
	code, stdout, stderr := runWeir(t, 60*time.Second, "stop", id, "--address", addr, "--dir", sps)
	m := stoppedLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil {
		t.Fatalf("weir stop: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := pr.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the stopped job exited %d; stderr:\n%s", code, pr.stderr.String())
	}
	stopped := len(committedLines(t, out))
	code, _, stderr = runWeir(t, 120*time.Second, append(args, "--rest-address", "", "--rate", "0", "--from", "latest")...)
	if code != ExitOK {
		t.Fatalf("resumed run: exit %d, %s", code, stderr)
	}
	if !strings.Contains(stderr, "resuming from savepoint") {
		t.Errorf("the resumed run did not say it resumed from the stop's savepoint: %s", stderr)
	}
	if got := committedLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines after stop and resume, want %d (%d at the stop)", len(got), len(want), stopped)
	}
	t.Logf("stopped at %d of %d lines (%s)", stopped, len(want), m[1])
}

// Two runs on one lineage: while one runs, a second one (resumed, or
// fresh) on the same checkpoint storage is refused at once, naming the
// first; once the first is killed, the resume takes over without waiting
// for the lease to expire, and the output is exactly once.
func TestProcessSecondRunOnLiveLineageRefused(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, cps := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "cps")
	want := writeKeyedInput(t, in, r, 4000, 30)
	args := []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
		"--checkpoint-interval", "150ms", "--parallelism", "2", "--rest-address", "127.0.0.1:0"}
	first := startWeir(t, "", append(args, "--rate", "1000")...)
	id, _ := waitStarted(t, first)
	waitCheckpoints(t, first, 1)
	for _, extra := range [][]string{{"--from", "latest"}, nil} {
		code, _, stderr := runWeir(t, 20*time.Second, append(slices.Clone(args), extra...)...)
		if code != ExitFailed || !strings.Contains(stderr, "is being written by job "+id) {
			t.Fatalf("second run %v while the first runs: exit %d, %s", extra, code, stderr)
		}
	}
	if first.cmd.ProcessState != nil {
		t.Fatalf("the first run ended: %s", first.stderr.String())
	}
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait(t, 20*time.Second)
	start := time.Now()
	code, _, stderr := runWeir(t, 120*time.Second, append(args, "--from", "latest")...)
	if code != ExitOK {
		t.Fatalf("resume after the kill: exit %d, %s", code, stderr)
	}
	if got := committedLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines, want %d", len(got), len(want))
	}
	t.Log(fmt.Sprintf("resumed and finished in %v", time.Since(start)))
}
