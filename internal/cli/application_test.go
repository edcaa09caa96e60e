package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// Application mode (docs/distributed-runtime.md, decisions 3 and 4): a
// user's program, built as its own module, started as the JobManager and
// as TaskManagers (WEIR_ROLE).

var appJobManagerReady = regexp.MustCompile(`application JobManager ready".* rpc=(\S+)`)

// buildExample builds examples/<name> (a module of its own, built against
// this repository) and returns the binary.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("../../examples", name))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/%s: %v\n%s", name, err, out)
	}
	return bin
}

// startAppJobManager starts program as an application's JobManager on a
// free port and returns it with its RPC address.
func startAppJobManager(t *testing.T, program string, env []string, args ...string) (*proc, string) {
	t.Helper()
	p := startProgramEnv(t, program, append([]string{"WEIR_ROLE=jobmanager", "WEIR_JOBMANAGER=127.0.0.1:0"}, env...), "", args...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && p.cmd.ProcessState == nil {
		if m := appJobManagerReady.FindStringSubmatch(p.stderr.String()); m != nil {
			return p, m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the application's JobManager did not say it was ready; stderr:\n%s", p.stderr.String())
	return nil, ""
}

// startAppTaskManager starts program as a TaskManager of the application
// at jm, with no arguments: it takes the JobManager's.
func startAppTaskManager(t *testing.T, program, jm, id string, env ...string) *proc {
	t.Helper()
	return startProgramEnv(t, program, append([]string{"WEIR_ROLE=taskmanager", "WEIR_JOBMANAGER=" + jm, "WEIR_TASKMANAGER_ID=" + id}, env...), "")
}

// TestApplicationMode: examples/application runs as a JobManager and
// TaskManagers started without arguments (each re-executes itself with
// the JobManager's); SIGKILL of a TaskManager running half the job at a
// random moment fails it over to a spare; the committed output is exactly
// once; the JobManager and the TaskManagers left all exit 0 when the
// application ends.
func TestApplicationMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program and runs a cluster of processes; the full run (scripts/test) covers it")
	}
	bin := buildExample(t, "application")
	r := testseed.Rand(t, 50)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	hb := []string{"WEIR_HEARTBEAT_INTERVAL=200ms", "WEIR_HEARTBEAT_TIMEOUT=1s"}
	jm, addr := startAppJobManager(t, bin, hb, "-input", input, "-output", output, "-checkpoints", filepath.Join(dir, "cp"),
		"-parallelism", "2", "-rate", "2000")
	victim := startAppTaskManager(t, bin, addr, "tm-a", hb...)
	tmB := startAppTaskManager(t, bin, addr, "tm-b", hb...)
	for !strings.Contains(jm.stderr.String(), "task slots available; deploying") {
		if jm.cmd.ProcessState != nil || time.Since(jm.started) > 30*time.Second {
			t.Fatalf("the job was not deployed; JobManager:\n%s\ntm-a:\n%s", jm.stderr.String(), victim.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	spare := startAppTaskManager(t, bin, addr, "tm-c", hb...)
	time.Sleep(time.Duration(300+r.IntN(1200)) * time.Millisecond)
	victim.cmd.Process.Signal(syscall.SIGKILL)
	if code, took, _ := jm.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("the JobManager exited %d after %v; stderr:\n%s", code, took, jm.stderr.String())
	}
	if !strings.Contains(jm.stdout.String(), "FINISHED") {
		t.Fatalf("the JobManager's program did not report the job finished; stdout:\n%s", jm.stdout.String())
	}
	if got := committedLines(t, output); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly once (first difference at %d); JobManager:\n%s", len(got), len(want), firstDiff(got, want), jm.stderr.String())
	}
	if !strings.Contains(jm.stderr.String(), "restarting") {
		t.Fatalf("no failover after the kill; JobManager:\n%s", jm.stderr.String())
	}
	for _, tm := range []*proc{tmB, spare} {
		if code, _, _ := tm.wait(t, 20*time.Second); code != 0 || !strings.Contains(tm.stdout.String(), "FINISHED") {
			t.Fatalf("TaskManager %v exited %d, stdout %q; stderr:\n%s", tm.cmd.Env[len(tm.cmd.Env)-3:], code, tm.stdout.String(), tm.stderr.String())
		}
	}
}

// TestApplicationModeRefusesAnotherJob: a TaskManager whose program builds
// another graph, or another configuration, from the same arguments (here:
// from its environment) is refused before it registers, naming both
// values, and exits 1; nothing is deployed.
func TestApplicationModeRefusesAnotherJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program and runs a cluster of processes; the full run (scripts/test) covers it")
	}
	bin := buildExternal(t, "./cmd/extapp")
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(input, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jm, addr := startAppJobManager(t, bin, nil, "-input", input, "-output", filepath.Join(dir, "out"),
		"-checkpoints", filepath.Join(dir, "cp"))
	for _, c := range []struct {
		env  string
		want *regexp.Regexp
	}{
		{"EXTAPP_VARIANT=1", regexp.MustCompile(`graph fingerprint [0-9a-f]+\) differs from the JobManager's \(graph fingerprint [0-9a-f]+\)`)},
		{"EXTAPP_BUFFER_TIMEOUT=7ms", regexp.MustCompile(`first difference: here "BufferTimeout=7ms", the JobManager's "BufferTimeout=100ms"`)},
	} {
		tm := startAppTaskManager(t, bin, addr, "tm-x", c.env)
		if code, _, _ := tm.wait(t, 30*time.Second); code != 1 || !c.want.MatchString(tm.stderr.String()) {
			t.Fatalf("%s: the TaskManager exited %d; want 1 and %q in its stderr:\n%s", c.env, code, c.want, tm.stderr.String())
		}
	}
	if s := jm.stderr.String(); strings.Contains(s, "TaskManager registered") || strings.Contains(s, "deploying") {
		t.Fatalf("a refused TaskManager registered or got a deployment; JobManager:\n%s", s)
	}
	jm.cmd.Process.Signal(syscall.SIGTERM)
	if code, _, _ := jm.wait(t, 20*time.Second); code != 1 || !strings.Contains(jm.stderr.String(), "canceled") {
		t.Fatalf("the JobManager exited %d after SIGTERM, want 1 naming the cancellation; stderr:\n%s", code, jm.stderr.String())
	}
}
