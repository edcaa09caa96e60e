package jobmanager

import (
	"errors"
	"flag"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/jobstate/*.txt")

// TestJobStateTraces runs the golden traces in testdata/jobstate. A file is a
// list of cases:
//
//	jobstate executions=N
//	EVENT
//	...
//	----
//	one line per event: the event, the job status, the executions to cancel
//	and every execution's state; then the failure cause
//
// Events: start; update I STATE [restart] [err=MSG] (restart: the restart
// strategy allows a restart); restart; cancel; fail MSG.
func TestJobStateTraces(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "jobstate", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runTraceFile(t, file) })
	}
}

func runTraceFile(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); {
		if l := lines[i]; strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out = append(out, l)
			i++
			continue
		}
		pos := fmt.Sprintf("%s:%d", filepath.Base(file), i+1)
		head := strings.Fields(lines[i])
		if head[0] != "jobstate" {
			t.Fatalf("%s: unknown command %q", pos, head[0])
		}
		n := 0
		for _, a := range head[1:] {
			if v, ok := strings.CutPrefix(a, "executions="); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		out = append(out, lines[i])
		i++
		var events []string
		for i < len(lines) && lines[i] != "----" {
			events = append(events, lines[i])
			out = append(out, lines[i])
			i++
		}
		i++ // ----
		var exp []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			exp = append(exp, lines[i])
			i++
		}
		actual := runTrace(t, pos, n, events)
		if !*rewrite && actual != strings.Join(exp, "\n") {
			t.Errorf("%s:\n--- got:\n%s\n--- want:\n%s", pos, actual, strings.Join(exp, "\n"))
		}
		out = append(out, "----", actual)
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runTrace(t *testing.T, pos string, n int, events []string) string {
	s := newJobState(n)
	var b strings.Builder
	for _, ev := range events {
		f := strings.Fields(ev)
		var toCancel []int
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			switch f[0] {
			case "start":
				s.start()
			case "cancel":
				toCancel = s.cancel()
			case "fail":
				toCancel = s.fail(errors.New(strings.Join(f[1:], " ")))
			case "restart":
				s.restart()
			case "update":
				i, _ := strconv.Atoi(f[1])
				rest3 := f[3:]
				restart := len(rest3) > 0 && rest3[0] == "restart"
				if restart {
					rest3 = rest3[1:]
				}
				var cause error
				if len(rest3) > 0 {
					cause = errors.New(strings.TrimPrefix(strings.Join(rest3, " "), "err="))
				}
				toCancel = s.update(i, protocol.TaskState(f[2]), cause, restart)
			default:
				t.Fatalf("%s: unknown event %q", pos, ev)
			}
			return nil
		}()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", ev, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %s", ev, s.status)
		if len(toCancel) > 0 {
			fmt.Fprintf(&b, " cancel=%v", toCancel)
		}
		fmt.Fprintf(&b, " %v\n", s.tasks)
		checkJobState(t, pos, ev, s)
	}
	if s.cause != nil {
		fmt.Fprintf(&b, "cause: %v (execution %d)\n", s.cause, s.failedAt)
	}
	return strings.TrimRight(b.String(), "\n")
}

// checkJobState checks the invariants that hold after every event.
func checkJobState(t *testing.T, pos, ev string, s *jobState) {
	t.Helper()
	live := 0
	for _, st := range s.tasks {
		if !st.Terminal() {
			live++
		}
	}
	if live != s.live {
		t.Errorf("%s: after %q: live=%d, but %d executions are not terminal", pos, ev, s.live, live)
	}
	if (live == 0) != s.status.Terminal() && s.status != protocol.JobCreated && s.status != protocol.JobRestarting {
		t.Errorf("%s: after %q: %d live executions, job %s", pos, ev, live, s.status)
	}
	if s.status == protocol.JobFailed && s.cause == nil {
		t.Errorf("%s: after %q: failed without a cause", pos, ev)
	}
}

func TestSetStatusPanicsOnDisallowedTransition(t *testing.T) {
	all := []protocol.JobState{protocol.JobCreated, protocol.JobRunning, protocol.JobRestarting, protocol.JobFailing, protocol.JobFailed, protocol.JobCancelling, protocol.JobCanceled, protocol.JobFinished}
	for _, from := range all {
		for _, to := range all {
			s := &jobState{status: from}
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				s.setStatus(to)
				return false
			}()
			if panicked == allowed(from, to) {
				t.Errorf("%s -> %s: panicked=%t, allowed=%t", from, to, panicked, allowed(from, to))
			}
			if from.Terminal() && !panicked {
				t.Errorf("%s -> %s: a terminal state was left", from, to)
			}
		}
	}
}
