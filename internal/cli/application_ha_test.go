package cli

import (
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// haAppEnv turns the -D settings of an HA test into an application's
// environment: the HA settings as WEIR_PROPERTIES lines, the heartbeats
// as their variables.
func haAppEnv(flags []string) []string {
	var props []string
	var env []string
	for i := 0; i+1 < len(flags); i += 2 {
		k, v, _ := strings.Cut(flags[i+1], "=")
		switch {
		case k == "heartbeat.interval":
			env = append(env, "WEIR_HEARTBEAT_INTERVAL="+v)
		case k == "heartbeat.timeout":
			env = append(env, "WEIR_HEARTBEAT_TIMEOUT="+v)
		default:
			props = append(props, k+": "+v)
		}
	}
	return append(env, "WEIR_PROPERTIES="+strings.Join(props, "\n"))
}

var appContending = regexp.MustCompile(`application JobManager contending".* id=(\S+)`)

// TestHAApplication, with each driver: examples/application started as two
// JobManagers that contend and three TaskManagers that know both. SIGKILL
// of the leader mid-job: the standby leads, runs the job again under the
// same fixed id from the latest checkpoint the store records, and the
// TaskManagers follow it; the committed output is exactly once, and the
// JobManager and TaskManagers left exit 0 reporting FINISHED. A JobManager
// started again in the killed one's place finds the application's end
// recorded and exits 0 with it, running nothing.
func TestHAApplication(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program and runs processes with an HA service: the full pass runs it")
	}
	bin := buildExample(t, "application")
	withEachDriver(t, 71, func(t *testing.T, r *rand.Rand, d haDriver, flags []string) {
		dir := t.TempDir()
		input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
		want := writeKeyedInput(t, input, r, 6000, 40)
		env := haAppEnv(flags)
		args := []string{"-input", input, "-output", output, "-checkpoints", filepath.Join(dir, "cp"), "-parallelism", "2", "-rate", "2000"}
		type jm struct {
			p         *proc
			rpc, rest string
		}
		startJM := func(rpc, rest string) jm {
			return jm{startProgramEnv(t, bin, append([]string{"WEIR_ROLE=jobmanager", "WEIR_JOBMANAGER=" + rpc, "WEIR_REST_ADDRESS=" + rest}, env...), "", args...), rpc, rest}
		}
		a := startJM(freeAddr(t), freeAddr(t))
		waitStderr(t, a.p, "JobManager leads", 20*time.Second)
		b := startJM(freeAddr(t), freeAddr(t))
		waitStderr(t, b.p, "JobManager is a standby", 20*time.Second)
		jms := a.rpc + "," + b.rpc
		var tms []*proc
		for _, id := range []string{"tm-a", "tm-b", "tm-c"} {
			tms = append(tms, startAppTaskManager(t, bin, jms, id, env...))
		}
		waitStderr(t, a.p, "checkpoint completed", 30*time.Second)
		time.Sleep(time.Duration(200+r.IntN(1000)) * time.Millisecond)
		if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		took := waitStderr(t, b.p, "JobManager leads", 4*haLease+5*time.Second)
		t.Logf("the standby leads %v after SIGKILL of the leader (lease %v)", took, haLease)
		waitStderr(t, b.p, "running the application", 10*time.Second)
		line := logLine(b.p, "running the application")
		if !strings.Contains(line, "resume=") || strings.Contains(line, `resume=""`) || strings.Contains(line, "resume= ") {
			t.Errorf("the new leader did not resume from a recorded checkpoint: %s", line)
		}
		if code, took, _ := b.p.wait(t, 90*time.Second); code != 0 {
			t.Fatalf("the new leader exited %d after %v; stderr:\n%s", code, took, b.p.stderr.String())
		}
		ida, idb := appContending.FindStringSubmatch(a.p.stderr.String()), appContending.FindStringSubmatch(b.p.stderr.String())
		if ida == nil || idb == nil || ida[1] != idb[1] || !strings.Contains(b.p.stdout.String(), "job "+ida[1]+" FINISHED") {
			t.Fatalf("want job %v FINISHED under the id both JobManagers derived (%v); the new leader's stdout: %q", ida, idb, b.p.stdout.String())
		}
		if got := committedLines(t, output); !slices.Equal(got, want) {
			t.Fatalf("committed %d lines, want %d exactly once (first difference at %d); new leader:\n%s", len(got), len(want), firstDiff(got, want), b.p.stderr.String())
		}
		for _, tm := range tms {
			if code, _, _ := tm.wait(t, 20*time.Second); code != 0 || !strings.Contains(tm.stdout.String(), "FINISHED") {
				t.Errorf("TaskManager %v exited %d, stdout %q; stderr:\n%s", tm.cmd.Env[len(tm.cmd.Env)-1:], code, tm.stdout.String(), tm.stderr.String())
			}
		}
		again := startJM(a.rpc, a.rest)
		if code, _, _ := again.p.wait(t, 30*time.Second); code != 0 || !strings.Contains(again.p.stdout.String(), "job "+ida[1]+" FINISHED") {
			t.Fatalf("a JobManager started after the end exited %d, stdout %q; stderr:\n%s", code, again.p.stdout.String(), again.p.stderr.String())
		}
		if strings.Contains(again.p.stderr.String(), "running the application") {
			t.Errorf("the application ran again after its end:\n%s", again.p.stderr.String())
		}
	})
}
