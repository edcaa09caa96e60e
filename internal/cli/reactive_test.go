package cli

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// TestReactiveRescales, with each driver: with -D scheduler-mode=reactive
// (and high availability, whose store says where each run resumes), keyed-count runs
// at the parallelism of the cluster's slots: a TaskManager joining
// rescales it from 2 to 4 subtasks, SIGKILL of that TaskManager back to 2,
// each time from its latest checkpoint under the same job id; the
// committed output is exactly once.
func TestReactiveRescales(t *testing.T) {
	withEachDriver(t, 41, func(t *testing.T, r *rand.Rand, _ haDriver, flags []string) {
		dir := t.TempDir()
		input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
		want := writeKeyedInput(t, input, r, 12000, 40)
		flags = append(flags, "--checkpoint-dir", filepath.Join(dir, "cp"),
			"-D", "scheduler-mode=reactive", "-D", "jobmanager.adaptive-scheduler.resource-stabilization-timeout=300ms")
		jm := startHAJobManager(t, flags)
		waitStderr(t, jm.p, "JobManager leads", 20*time.Second)
		hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
		startTaskManager(t, os.Args[0], jm.rpc, "tm-a", 2, hb...)
		client := startWeir(t, "", "run", "keyed-count", "--jobmanager", jm.rpc, "--detached", "--input", input, "--output", output,
			"--parallelism", "1", "--checkpoint-interval", "100ms", "--rate", "2000")
		if code, _, _ := client.wait(t, 30*time.Second); code != ExitOK {
			t.Fatalf("the detached client exited %d; stderr:\n%s\nJobManager:\n%s", code, client.stderr.String(), jm.p.stderr.String())
		}
		waitStderr(t, jm.p, "checkpoint completed", 20*time.Second)
		time.Sleep(time.Duration(r.IntN(800)) * time.Millisecond)
		joined := startTaskManager(t, os.Args[0], jm.rpc, "tm-b", 2, hb...)
		waitStderr(t, jm.p, "from=2 to=4", 10*time.Second)
		waitStderr(t, jm.p, "resuming from checkpoint", 10*time.Second)
		time.Sleep(time.Duration(500+r.IntN(800)) * time.Millisecond)
		if err := joined.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitStderr(t, jm.p, "from=4 to=2", 15*time.Second)
		if st := waitJobEnd(t, 90*time.Second, jm); st != protocol.JobFinished {
			t.Fatalf("the job ended %s; JobManager:\n%s", st, jm.p.stderr.String())
		}
		if got := committedLines(t, output); !equalLines(got, want) {
			t.Fatalf("committed %d lines, want %d exactly once (first difference at %d); JobManager:\n%s", len(got), len(want), firstDiff(got, want), jm.p.stderr.String())
		}
	})
}
