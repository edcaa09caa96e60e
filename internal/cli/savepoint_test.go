package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

var (
	savepointLine = regexp.MustCompile(`savepoint completed: (\S+)`)
	stoppedLine   = regexp.MustCompile(`stopped with savepoint: (\S+)`)
)

// weir savepoint and weir stop against a keyed-count process: a savepoint
// of the running job, then a stop with a savepoint (the process exits 0,
// FINISHED); a run resumed from the stop's savepoint at another
// parallelism and backend completes the output exactly (the reference).
// The first savepoint goes to the job's --savepoint-dir. Usage errors exit
// 2; a savepoint of a job that is gone exits 1.
func TestProcessSavepointAndStop(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, cps, sps := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "cps"), filepath.Join(dir, "sps")
	want := writeKeyedInput(t, in, r, 6000, 50)
	pr := startWeir(t, "", "run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
		"--checkpoint-interval", "200ms", "--rate", "3000", "--parallelism", "2", "--rest-address", "127.0.0.1:0", "--savepoint-dir", sps)
	id, addr := waitStarted(t, pr)

	if code, _, stderr := runWeir(t, 20*time.Second, "savepoint", id, "--address", addr, "--format", "sideways"); code != ExitUsage || !strings.Contains(stderr, "--format") {
		t.Fatalf("bad --format: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runWeir(t, 20*time.Second, "savepoint", "inspect", filepath.Join(dir, "missing")); code != ExitFailed || !strings.Contains(stderr, "missing") {
		t.Fatalf("savepoint inspect of a missing path: exit %d, %s", code, stderr)
	}
	time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
	// No --dir: the job's --savepoint-dir.
	code, stdout, stderr := runWeir(t, 60*time.Second, "savepoint", id, "--rest-address", addr)
	m := savepointLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil || !strings.Contains(m[1], filepath.ToSlash(sps)+"/savepoint-") {
		t.Fatalf("weir savepoint: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
	code, stdout, stderr = runWeir(t, 60*time.Second, "stop", id, "--address", addr, "--dir", sps)
	m = stoppedLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil {
		t.Fatalf("weir stop: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := pr.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the stopped job exited %d, want 0 (FINISHED); stderr:\n%s", code, pr.stderr.String())
	}
	stopped := len(committedLines(t, out))
	if code, _, stderr := runWeir(t, 20*time.Second, "savepoint", id, "--address", addr, "--dir", sps); code != ExitFailed {
		t.Fatalf("savepoint of a stopped job: exit %d, %s", code, stderr)
	}
	code, _, stderr = runWeir(t, 120*time.Second, "run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
		"--from", m[1], "--parallelism", "3", "--state-backend", "pebble", "--rest-address", "")
	if code != ExitOK {
		t.Fatalf("resumed run: exit %d, %s", code, stderr)
	}
	if got := committedLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines after the resume, want %d", len(got), len(want))
	}
	t.Logf("stopped with %d of %d lines committed; %s", stopped, len(want), fmt.Sprint(m[1]))
}
