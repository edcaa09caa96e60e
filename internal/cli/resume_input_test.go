package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// keyed-count checkpointed while reading one file and resumed (--from
// latest) with --input naming another fails within seconds with exit 1,
// naming both inputs and saying to resume with the same --input. It used
// to read on in the checkpoint's file, never the new one, and exit 0. The
// resume with the same --input then counts the first file exactly once.
func TestProcessResumeWithAnotherInputRefused(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	inA, inB := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	out, cps := filepath.Join(dir, "out"), filepath.Join(dir, "cps")
	wantA := writeKeyedInput(t, inA, r, 4000, 20)
	writeKeyedInput(t, inB, r, 4000, 20)
	args := func(in string) []string {
		return []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
			"--checkpoint-interval", "100ms", "--parallelism", "2", "--rest-address", ""}
	}
	pr := startWeir(t, "", append(args(inA), "--rate", "1000")...)
	waitCheckpoints(t, pr, 2)
	pr.cmd.Process.Signal(syscall.SIGKILL)
	pr.wait(t, 20*time.Second)

	start := time.Now()
	code, _, stderr := runWeir(t, 30*time.Second, append(args(inB), "--from", "latest")...)
	took := time.Since(start)
	if code != ExitFailed {
		t.Fatalf("resumed with another --input: exit %d, want %d; stderr:\n%s", code, ExitFailed, stderr)
	}
	for _, s := range []string{"read input " + inA, "this run's input is " + inB, "resume with the same --input", "without --from"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr does not say %q:\n%s", s, stderr)
		}
	}
	if took > 15*time.Second {
		t.Errorf("the refused resume took %v", took)
	}

	code, _, stderr = runWeir(t, 60*time.Second, append(args(inA), "--from", "latest")...)
	if code != ExitOK {
		t.Fatalf("resumed with the same --input: exit %d; stderr:\n%s", code, stderr)
	}
	if got := committedLines(t, out); !slices.Equal(got, wantA) {
		t.Fatalf("%d committed lines, want %d", len(got), len(wantA))
	}
	t.Logf("refused in %v", took)
}
