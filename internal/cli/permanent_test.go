package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// failsAtOnce runs weir and checks that it exits 1 within limit, that its
// error is marked permanent (not restarted) and says each of wants.
func failsAtOnce(t *testing.T, limit time.Duration, args []string, wants ...string) string {
	t.Helper()
	pr := startWeir(t, "", args...)
	code, took, _ := pr.wait(t, 60*time.Second)
	msg := pr.stderr.String()
	if code != ExitFailed || took > limit {
		t.Fatalf("weir %v: exit %d after %v, want 1 within %v; stderr:\n%s", args, code, took.Round(time.Millisecond), limit, msg)
	}
	for _, w := range append(wants, "the failure is permanent") {
		if !strings.Contains(msg, w) {
			t.Errorf("weir %v: stderr does not say %q:\n%s", args, w, msg)
		}
	}
	if strings.Contains(msg, "restarting (attempt") {
		t.Errorf("weir %v restarted:\n%s", args, msg)
	}
	return msg
}

// A bad line (keyed-count; window-agg with checkpoints) and keyed-count's
// int64 overflow end the job within seconds with exit 1: with checkpoints
// the restart strategy restarted them forever, the backoff growing to a
// minute.
func TestProcessPermanentErrorsEndTheJob(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc.txt")
	os.WriteFile(kc, []byte("a\t1\nb\t2\nnot a record\na\t3\n"), 0o644)
	failsAtOnce(t, 10*time.Second, []string{"run", "keyed-count", "--input", kc, "--output", filepath.Join(dir, "out1"),
		"--checkpoint-dir", filepath.Join(dir, "ck1"), "--rest-address", ""}, kc+" line 3: want key<TAB>value", "--bad-records")

	wa := filepath.Join(dir, "wa.jsonl")
	os.WriteFile(wa, []byte(`{"ts": 1, "key": "a", "value": 1}`+"\n"+`{"ts": 2, "key": "a", "value": "x"}`+"\n"), 0o644)
	failsAtOnce(t, 10*time.Second, []string{"run", "window-agg", "--input", wa, "--output", filepath.Join(dir, "out2"), "--window", "tumbling:1s",
		"--checkpoint-dir", filepath.Join(dir, "ck2"), "--rest-address", ""}, wa+` line 2: "value"`)

	ov := filepath.Join(dir, "ov.txt")
	os.WriteFile(ov, []byte("big\t9223372036854775807\nsmall\t1\nbig\t1\n"), 0o644)
	failsAtOnce(t, 10*time.Second, []string{"run", "keyed-count", "--input", ov, "--output", filepath.Join(dir, "out3"),
		"--checkpoint-dir", filepath.Join(dir, "ck3"), "--rest-address", ""}, `key "big": the sum overflows int64`)
}

// runUntilCheckpoint runs keyed-count (throttled) until a checkpoint
// completed, then kills it with SIGKILL. stdin, if not nil, is its input.
func runUntilCheckpoint(t *testing.T, args []string, stdin *os.File) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "WEIR_CLI_PROCESS=1", "TMPDIR="+t.TempDir())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "checkpoint 2 complete"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint within 30s; stderr:\n%s", stderr.String())
		}
	}
}

// A state file of the newest checkpoint that is truncated, or missing,
// ends the resumed job at once with exit 1, naming the checkpoint and the
// object and saying to resume from an older one with --from; an error
// reading the store (here a symbolic link loop) is retried by the restart
// strategy, which --restart-strategy sets.
func TestProcessCorruptStateFileOnRestore(t *testing.T) {
	r := testseed.Rand(t, 38)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeKeyedInput(t, in, r, 4000, 10)
	base := filepath.Join(dir, "base")
	runUntilCheckpoint(t, []string{"run", "keyed-count", "--input", in, "--output", filepath.Join(base, "out"), "--checkpoint-dir", filepath.Join(base, "ck"),
		"--checkpoint-interval", "100ms", "--rate", "1000", "--rest-address", ""}, nil)
	for _, damage := range []string{"truncate", "remove", "loop"} {
		run := filepath.Join(dir, damage)
		if out, err := exec.Command("cp", "-a", base, run).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		objs, _ := filepath.Glob(filepath.Join(run, "ck", "*", "chk-*", "*-keyed"))
		if len(objs) == 0 {
			t.Fatalf("no keyed state object in %s", run)
		}
		slices.Sort(objs)
		obj := objs[len(objs)-1] // chk-N sorts by name; any retained one will do, the newest is used
		metas, _ := filepath.Glob(filepath.Join(run, "ck", "*", "chk-*", "_metadata"))
		for _, m := range metas {
			if filepath.Dir(m) != filepath.Dir(obj) {
				os.RemoveAll(filepath.Dir(m)) // only the damaged checkpoint is left
			}
		}
		switch damage {
		case "truncate":
			os.Truncate(obj, 20)
		case "remove":
			os.Remove(obj)
		case "loop":
			os.Remove(obj)
			os.Symlink(filepath.Base(obj), obj)
		}
		args := []string{"run", "keyed-count", "--input", in, "--output", filepath.Join(run, "out"), "--checkpoint-dir", filepath.Join(run, "ck"),
			"--from", "latest", "--rest-address", ""}
		chk := filepath.Base(filepath.Dir(obj))
		if damage != "loop" {
			failsAtOnce(t, 15*time.Second, args, "restoring keyed state of checkpoint "+strings.TrimPrefix(chk, "chk-"),
				filepath.Join(chk, filepath.Base(obj)), "--from")
			continue
		}
		args = append(args, "--restart-strategy", "fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=2", "-Drestart-strategy.fixed-delay.delay=10ms")
		pr := startWeir(t, "", args...)
		code, _, _ := pr.wait(t, 60*time.Second)
		msg := pr.stderr.String()
		if code != ExitFailed || !strings.Contains(msg, "restarting (attempt 2)") || strings.Contains(msg, "restarting (attempt 3)") ||
			!strings.Contains(msg, "restart-strategy.fixed-delay.attempts (2) exhausted") {
			t.Fatalf("a store error with fixed-delay, 2 attempts: exit %d, want 1 after 2 restarts; stderr:\n%s", code, msg)
		}
	}
}

// Resuming a job that read standard input ends at once with exit 1: the
// stream cannot be read again (it was restarted forever).
func TestProcessResumeAfterStdinFails(t *testing.T) {
	dir := t.TempDir()
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer wr.Close()
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(wr, "k%d\t%d\n", i%7, i); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	args := []string{"run", "keyed-count", "--input", "-", "--output", filepath.Join(dir, "out"), "--checkpoint-dir", filepath.Join(dir, "ck"),
		"--checkpoint-interval", "100ms", "--rest-address", "", "--from", "latest"}
	runUntilCheckpoint(t, args, rd)
	failsAtOnce(t, 10*time.Second, args, "cannot resume reading standard input")
}

// --restart-strategy and -D restart-strategy.* are checked before the job
// starts: every mistake is a usage error (exit 2) naming the flag or key.
func TestRestartFlagValidation(t *testing.T) {
	kc := []string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--restart-strategy", "sometimes"}, `restart-strategy.type: unknown strategy "sometimes"`},
		{[]string{"--restart-strategy", "fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=x"}, "restart-strategy.fixed-delay.attempts"},
		{[]string{"--restart-strategy", "fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=-1"}, "restart-strategy.fixed-delay.attempts"},
		{[]string{"--restart-strategy", "fixed-delay", "-Drestart-strategy.failure-rate.delay=1s"}, "-D restart-strategy.failure-rate.delay does not apply to the restart strategy fixed-delay"},
		{[]string{"--restart-strategy", "none", "-D", "restart-strategy.fixed-delay.delay=1s"}, "does not apply to the restart strategy none"},
		{[]string{"-D", "restart-strategy.fixed-delay.attempts=3"}, "need --restart-strategy"},
		{[]string{"--restart-strategy", "exponential-delay", "-D", "restart-strategy.exponential-delay.backoff-multiplier=1"}, "backoff-multiplier"},
		{[]string{"--restart-strategy", "exponential-delay", "-D", "restart-strategy.exponential-delay.initial-backoff=1min", "-D", "restart-strategy.exponential-delay.max-backoff=1s"}, "max-backoff"},
		{[]string{"--restart-strategy", "fixed-delay", "-D", "restart-strategy.fixed-delay.atempts=3"}, "restart-strategy.fixed-delay.atempts: unknown key"},
		{[]string{"-D", "parallelism.default=3"}, "-D parallelism.default: weir run takes only the restart-strategy.* settings"},
		{[]string{"-D", "novalue"}, "want KEY=VALUE"},
		{[]string{"-D", "slot.request.timeout=soon"}, `-D slot.request.timeout: "soon" is not a duration`},
		{[]string{"-D", "slot.request.timeout=0"}, `-D slot.request.timeout: must be > 0, got "0"`},
		{[]string{"-D", "slot.request.timeout=1min", "-D", "slot.request.timeout=2min"}, "-D slot.request.timeout is given twice"},
		{[]string{"--restart-strategy", "none", "-D", "restart-strategy.type=fixed-delay"}, "disagree"},
		{[]string{"--bad-records", "ignore"}, `--bad-records "ignore": want fail, skip or dead-letter`},
		{[]string{"--bad-records", "dead-letter"}, "--bad-records dead-letter needs --dead-letter"},
		{[]string{"--dead-letter", "d"}, "--dead-letter applies only to --bad-records dead-letter"},
		{[]string{"--bad-records", "dead-letter", "--dead-letter", "b"}, `--dead-letter "b" is the job's input or output`},
		{[]string{"--dead-letter-topic", "t"}, "--dead-letter-topic does not apply to keyed-count"},
	} {
		args := append(slices.Clone(kc), tc.args...)
		code, out, errOut := runCLI(args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	for _, args := range [][]string{
		{"run", "wordcount", "--bad-records", "skip"},
		{"run", "clicks", "--dead-letter", "x"},
		{"run", "kafka-keyed-count", "--input-topic", "i", "--output-topic", "o", "--guarantee", "none", "--bad-records", "dead-letter"},
		{"run", "kafka-keyed-count", "--input-topic", "i", "--output-topic", "o", "--guarantee", "none", "--bad-records", "dead-letter", "--dead-letter-topic", "o"},
		{"run", "window-agg", "--input", "a", "--output", "b", "--window", "tumbling:1s", "--late-output", "l", "--bad-records", "dead-letter", "--dead-letter", "l"},
	} {
		if code, _, errOut := runCLI(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}

func TestSplitDashD(t *testing.T) {
	got := splitDashD([]string{"-Da=1", "-D", "b=2", "-D=c=3", "--", "-Dx=y"})
	want := []string{"-D", "a=1", "-D", "b=2", "-D=c=3", "--", "-Dx=y"}
	if !slices.Equal(got, want) {
		t.Fatalf("splitDashD = %q, want %q", got, want)
	}
}

// --bad-records reaches the job: skip gives the counts of the good lines,
// dead-letter also writes each bad line, exactly once, with file and line.
// A byte order mark and blank lines are neither keys nor bad lines.
func TestProcessBadRecordsFlag(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("\ufeffa\t1\n\n   \nnot a record\nb\t2\na\t3\n\t4\n"), 0o644)
	want := []string{"a\t1\t1", "a\t2\t4", "b\t1\t2"}
	for _, policy := range []string{"skip", "dead-letter"} {
		out := filepath.Join(dir, "out-"+policy)
		args := []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", filepath.Join(dir, "ck-"+policy),
			"--rest-address", "", "--bad-records", policy}
		if policy == "dead-letter" {
			args = append(args, "--dead-letter", filepath.Join(dir, "dead"))
		}
		if code, _, errOut := runWeir(t, 60*time.Second, args...); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", policy, code, errOut)
		}
		if got := committedLines(t, out); !slices.Equal(got, want) {
			t.Fatalf("%s: output %q, want %q", policy, got, want)
		}
	}
	dead := committedLines(t, filepath.Join(dir, "dead"))
	wantDead := []string{
		`{"source":"` + in + `:4","error":"want key<TAB>value, got \"not a record\"","record":"not a record"}`,
		`{"source":"` + in + `:7","error":"the key is empty","record":"\t4"}`,
	}
	if !slices.Equal(dead, wantDead) {
		t.Fatalf("dead letters\n%s\nwant\n%s", strings.Join(dead, "\n"), strings.Join(wantDead, "\n"))
	}
}

// -D slot.request.timeout is read in Flink's duration notation and needs
// no --restart-strategy.
func TestSlotRequestTimeoutFlag(t *testing.T) {
	r := restartFlags{props: propsFlag{{"slot.request.timeout", "90 s"}}}
	if kv, err := r.config(true); kv != nil || err != nil {
		t.Fatalf("restart config: %v, %v; want none", kv, err)
	}
	if d, err := r.slotRequestTimeout(); d != 90*time.Second || err != nil {
		t.Fatalf("slot.request.timeout: %v, %v; want 1m30s", d, err)
	}
}
