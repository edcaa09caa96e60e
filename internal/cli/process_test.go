package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/kafkatest"
	"github.com/weirhq/weir/internal/kubetest"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// The test binary doubles as the weir command: with WEIR_CLI_PROCESS=1 it
// runs Main on its arguments and exits, so tests can run real processes,
// send them signals and measure them, without building anything.
func TestMain(m *testing.M) {
	if os.Getenv("WEIR_CLI_PROCESS") == "1" {
		code := Main(os.Args[1:], os.Stdout, os.Stderr)
		writePeakRSS(os.Getenv("WEIR_TEST_PEAK_RSS"))
		os.Exit(code)
	}
	kafkatest.Main(m, kubetest.Stop) // stops the broker TestBenchKafka started and the API server, if any
}

// writePeakRSS writes this process's peak resident set (VmHWM of
// /proc/self/status, in kB) to path, when given. The rusage a parent gets
// for its child is no measure of the child: Go starts children with
// CLONE_VM, and Linux keeps the high-water mark of the memory shared until
// exec, so a child of a large test binary "peaks" at its parent's size.
// VmHWM belongs to the memory of the exec'd program alone.
func writePeakRSS(path string) {
	if path == "" {
		return
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			os.WriteFile(path, []byte(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))), 0o644)
		}
	}
}

// proc is one weir process started by a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer // written by exec's copying goroutines
	started        time.Time
	peakFile       string // where the process writes its peak RSS (writePeakRSS)
}

func startWeir(t *testing.T, stdin string, args ...string) *proc {
	t.Helper()
	return startProgram(t, os.Args[0], stdin, args...)
}

// startProgram starts a program (the weir command when it is this test
// binary).
func startProgram(t *testing.T, program, stdin string, args ...string) *proc {
	t.Helper()
	return startProgramEnv(t, program, nil, stdin, args...)
}

// startProgramEnv is startProgram with env added to the environment.
func startProgramEnv(t *testing.T, program string, env []string, stdin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(program, args...)}
	// Its own TMPDIR: a process a test kills hard cannot remove its
	// temporary state directory, and the test's cleanup then does.
	tmp := t.TempDir()
	p.peakFile = filepath.Join(tmp, "peak-rss-kb")
	p.cmd.Env = append(append(os.Environ(), "WEIR_CLI_PROCESS=1", "TMPDIR="+tmp, "WEIR_TEST_PEAK_RSS="+p.peakFile), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if stdin != "" {
		p.cmd.Stdin = strings.NewReader(stdin)
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait returns the exit code, the wall time since start and the peak RSS in
// bytes: the process's own (writePeakRSS) when it wrote it, else its
// rusage, which includes what it shared with this test binary before exec.
func (p *proc) wait(t *testing.T, limit time.Duration) (code int, took time.Duration, maxRSS int64) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		// The first SIGQUIT cancels; a second one dumps every goroutine's
		// stack to stderr and exits.
		p.cmd.Process.Signal(syscall.SIGQUIT)
		time.Sleep(200 * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("weir %v did not exit within %v; stderr:\n%s", p.cmd.Args[1:], limit, p.stderr.String())
	}
	took = time.Since(p.started)
	ru := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	maxRSS = ru.Maxrss << 10
	if b, err := os.ReadFile(p.peakFile); err == nil {
		if kb, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			maxRSS = kb << 10
		}
	}
	return p.cmd.ProcessState.ExitCode(), took, maxRSS
}

func runWeir(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startWeir(t, "", args...)
	code, _, _ = p.wait(t, limit)
	return code, p.stdout.String(), p.stderr.String()
}

// writeWords writes a text file of n lines of words.
func writeWords(t *testing.T, path string, lines int) {
	t.Helper()
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "w%d alpha beta w%d gamma\n", i%997, i%13)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Memory grows at most linearly with the parallelism, not with its square:
// parallelism 256 on a tiny file runs in a few seconds and well under
// 500 MB.
func TestProcessHighParallelismBoundedMemory(t *testing.T) {
	p := 256
	if testing.Short() {
		p = 128 // the race detector multiplies memory
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "book.txt"), filepath.Join(dir, "counts.txt")
	os.WriteFile(in, []byte("It was the best of times,\nit was the worst of times.\n"), 0o644)
	pr := startWeir(t, "", "run", "wordcount", "--input", in, "--output", out, "--parallelism", fmt.Sprint(p), "--rest-address", "")
	code, took, rss := pr.wait(t, 60*time.Second)
	t.Logf("parallelism %d: exit %d in %v, peak RSS %d MiB", p, code, took.Round(time.Millisecond), rss>>20)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, pr.stderr.String())
	}
	if rss > 500<<20 {
		t.Errorf("peak RSS %d MiB, want under 500 MiB", rss>>20)
	}
	if took > 20*time.Second {
		t.Errorf("took %v", took)
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), "times\t2") {
		t.Errorf("output %q", data)
	}
}

// A parallelism whose channels need more buffers than the network memory
// fails within a second, saying what it needs and what to change.
func TestProcessNetworkMemoryExceededFailsFast(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a b\n"), 0o644)
	pr := startWeir(t, "", "run", "wordcount", "--input", in, "--output", filepath.Join(dir, "out"), "--parallelism", "1000", "--rest-address", "")
	code, took, _ := pr.wait(t, 30*time.Second)
	msg := pr.stderr.String()
	if code != ExitFailed || took > 3*time.Second {
		t.Fatalf("exit %d after %v, want 1 within about a second: %s", code, took, msg)
	}
	for _, want := range []string{"not enough network memory", "1001000 output channels", "taskmanager.memory.network.max", "--network-memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not say %q: %s", want, msg)
		}
	}
	if strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("want one line, got:\n%s", msg)
	}
}

// A wide run and the exit codes: SIGTERM at any moment of a wide run
// ends it within 2 seconds with exit code 130, leaving nothing behind.
func TestProcessSigtermAtAnyMoment(t *testing.T) {
	r := testseed.Rand(t, 0)
	p, lines := 256, 1_500_000
	if testing.Short() {
		p, lines = 32, 300_000
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	writeWords(t, in, lines)
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	args := []string{"run", "wordcount", "--input", in, "--output", filepath.Join(outDir, "counts.txt"), "--parallelism", fmt.Sprint(p), "--rest-address", ""}
	// One whole run tells how long the stages take; signals then land at
	// random moments within it: compile, deploy, run, finish.
	pr := startWeir(t, "", args...)
	code, whole, _ := pr.wait(t, 120*time.Second)
	if code != ExitOK {
		t.Fatalf("uninterrupted run: exit %d: %s", code, pr.stderr.String())
	}
	complete := sortedLines(t, filepath.Join(outDir, "counts.txt"))
	os.RemoveAll(outDir)
	os.Mkdir(outDir, 0o755)
	t.Logf("an uninterrupted run at parallelism %d takes %v", p, whole.Round(time.Millisecond))
	for round := range 5 {
		delay := time.Duration(r.Int64N(int64(whole)))
		pr := startWeir(t, "", args...)
		time.Sleep(delay)
		sent := time.Now()
		pr.cmd.Process.Signal(syscall.SIGTERM)
		code, _, _ := pr.wait(t, 30*time.Second)
		took := time.Since(sent)
		t.Logf("round %d: SIGTERM after %v: exit %d after %v", round, delay.Round(time.Millisecond), code, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("round %d: exited %v after SIGTERM, want within 2s", round, took)
		}
		if ws, ok := pr.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM &&
			delay < 500*time.Millisecond && pr.stderr.String() == "" {
			// Before the process has installed its handler (the Go runtime's
			// and the packages' initialization: tens of ms, more under the
			// race detector on a busy machine), SIGTERM ends it the default
			// way. It has printed nothing then.
			continue
		}
		switch code {
		case ExitCanceled:
			if !strings.Contains(pr.stderr.String(), "weir: canceled") {
				t.Errorf("round %d: stderr %q", round, pr.stderr.String())
			}
			// Nothing hidden or partial is left. A signal that lands as the
			// job ends may cancel it after its sink renamed the complete
			// output into place: then the output must be whole.
			entries, _ := os.ReadDir(outDir)
			for _, e := range entries {
				if e.Name() != "counts.txt" {
					t.Errorf("round %d: a canceled job left %s behind", round, e.Name())
				} else if got := sortedLines(t, filepath.Join(outDir, e.Name())); got != complete {
					t.Errorf("round %d: a canceled job left a partial %s (%d bytes of %d)", round, e.Name(), len(got), len(complete))
				}
			}
			os.RemoveAll(outDir)
			os.Mkdir(outDir, 0o755)
		case ExitOK: // the job finished before the signal: aim earlier
			whole /= 2
			os.RemoveAll(outDir)
			os.Mkdir(outDir, 0o755)
		default:
			t.Errorf("round %d: exit %d; stderr:\n%s", round, code, pr.stderr.String())
		}
	}
}

func sortedLines(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Exit codes are the same for every job and way of stopping, and
// every failure is printed once.
func TestProcessExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tx.jsonl")
	os.WriteFile(bad, []byte("{\"account\": \"a\", \"amount\": 1, \"ts\": 1}\nnot json\n"), 0o644)
	code, _, stderr := runWeir(t, 60*time.Second, "run", "fraud-detection", "--input", bad, "--output", filepath.Join(dir, "alerts"), "--rest-address", "")
	if code != ExitFailed {
		t.Fatalf("failed job: exit %d, want 1: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var failures []string
	for _, l := range lines {
		if !strings.Contains(l, "started") {
			failures = append(failures, l)
		}
	}
	if len(failures) != 1 || strings.Contains(stderr, "weir: weir:") || !strings.Contains(failures[0], "line 2") {
		t.Errorf("want the failure once, with its line, without a doubled prefix; got:\n%s", stderr)
	}

	// Ctrl-C on a job that never ends on its own.
	pr := startWeir(t, "", "run", "clicks", "--rest-address", "")
	time.Sleep(500 * time.Millisecond)
	pr.cmd.Process.Signal(os.Interrupt)
	if code, _, _ := pr.wait(t, 10*time.Second); code != ExitCanceled {
		t.Errorf("clicks after SIGINT: exit %d, want 130: %s", code, pr.stderr.String())
	}

	// Canceled through the REST API (weir cancel).
	pr = startWeir(t, "", "run", "clicks", "--rest-address", "127.0.0.1:0", "--rate", "100")
	id, addr := waitStarted(t, pr)
	if code, out, errOut := runWeir(t, 30*time.Second, "cancel", id, "--address", addr); code != ExitOK {
		t.Fatalf("weir cancel: exit %d: %s %s", code, out, errOut)
	}
	if code, _, _ := pr.wait(t, 10*time.Second); code != ExitCanceled || !strings.Contains(pr.stderr.String(), "the job was canceled") {
		t.Errorf("clicks canceled by weir cancel: exit %d, want 130: %s", code, pr.stderr.String())
	}
}

var startedLine = regexp.MustCompile(`weir: job ([0-9a-f]{32}) started; REST API at http://(\S+)`)

// waitStarted waits for the "job started" line and returns the job ID and
// the REST address it printed.
func waitStarted(t *testing.T, pr *proc) (id, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := startedLine.FindStringSubmatch(pr.stderr.String()); m != nil {
			return m[1], m[2]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no start line; stderr:\n%s", pr.stderr.String())
	return "", ""
}

// With the default port taken, a job still runs and its REST API
// listens on a free port, printed; a port given explicitly that is taken
// fails at once; the printed address is the one bound (not :0).
func TestProcessRESTAddress(t *testing.T) {
	// Hold the default port (if something else holds it, it is taken anyway).
	if ln, err := net.Listen("tcp", rest.DefaultAddr); err == nil {
		defer ln.Close()
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("x y x\n"), 0o644)
	code, _, stderr := runWeir(t, 30*time.Second, "run", "wordcount", "--input", in, "--output", filepath.Join(dir, "out"))
	if code != ExitOK {
		t.Fatalf("with the default port taken: exit %d: %s", code, stderr)
	}
	m := startedLine.FindStringSubmatch(stderr)
	if m == nil || m[2] == rest.DefaultAddr || strings.HasSuffix(m[2], ":0") {
		t.Fatalf("want a free port announced, got: %s", stderr)
	}

	start := time.Now()
	code, _, stderr = runWeir(t, 30*time.Second, "run", "wordcount", "--input", in, "--output", filepath.Join(dir, "out2"), "--rest-address", rest.DefaultAddr)
	if code != ExitFailed || !strings.Contains(stderr, "in use") || !strings.Contains(stderr, "--rest-address") || time.Since(start) > 5*time.Second {
		t.Fatalf("explicit busy address: exit %d after %v: %s", code, time.Since(start), stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); err == nil {
		t.Error("the job ran although its REST address was taken")
	}

	pr := startWeir(t, "", "run", "clicks", "--rest-address", "127.0.0.1:0")
	_, addr := waitStarted(t, pr)
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("announced %s, not the bound port", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rest.NewClient(addr, nil).JobsOverview(ctx); err != nil {
		t.Errorf("the announced address %s does not answer: %v", addr, err)
	}
	pr.cmd.Process.Signal(syscall.SIGTERM)
	pr.wait(t, 10*time.Second)
}

// lockedBuffer is a bytes.Buffer safe for the signal goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The first Ctrl-C cancels; a second one exits at once with 130, whatever
// the job is doing.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	exited := make(chan int, 1)
	exitNow = func(code int) { exited <- code }
	defer func() { exitNow = os.Exit }()
	var errOut lockedBuffer
	ctx, stop := interruptible(&errOut)
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGINT did not cancel")
	}
	select {
	case code := <-exited:
		t.Fatalf("exited with %d after one SIGINT", code)
	case <-time.After(50 * time.Millisecond):
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code := <-exited:
		if code != ExitCanceled {
			t.Fatalf("exit code %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGINT did not exit")
	}
	if !strings.Contains(errOut.String(), "press Ctrl-C again") {
		t.Errorf("stderr %q does not say how to exit at once", errOut.String())
	}
}
