package cli

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every terminating signal cancels the job the same way: SIGHUP (the
// terminal closed) and SIGQUIT (Ctrl-\) as SIGINT and SIGTERM, exit 130
// after the job was canceled; none kills the process without canceling,
// and none exits 2, the usage code.
func TestProcessSignalsCancel(t *testing.T) {
	if signalIgnoredHere(t, syscall.SIGHUP) {
		t.Log("SIGHUP is ignored in this process (nohup), and so in weir's: its case is left out")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGINT} {
		if sig == syscall.SIGHUP && signalIgnoredHere(t, sig) {
			continue
		}
		t.Run(sig.String(), func(t *testing.T) {
			pr := startWeir(t, "", "run", "clicks", "--rest-address", "127.0.0.1:0", "--rate", "100")
			waitStarted(t, pr)
			pr.cmd.Process.Signal(sig)
			code, _, _ := pr.wait(t, 10*time.Second)
			stderr := pr.stderr.String()
			if code != ExitCanceled {
				t.Fatalf("exit %d after %v, want 130; stderr:\n%s", code, sig, stderr)
			}
			if !strings.Contains(stderr, sig.String()+": canceling") || !strings.Contains(stderr, "canceled") {
				t.Errorf("stderr does not say the %v canceled the job:\n%s", sig, stderr)
			}
			if strings.Contains(stderr, "goroutine ") {
				t.Errorf("one %v printed goroutine stacks:\n%s", sig, stderr)
			}
		})
	}
}

// With WEIR_TRACEBACK set, SIGQUIT prints every goroutine's stack (Go's
// default SIGQUIT dump) and still cancels the job with exit 130.
func TestProcessSigquitTraceback(t *testing.T) {
	t.Setenv("WEIR_TRACEBACK", "1")
	pr := startWeir(t, "", "run", "clicks", "--rest-address", "127.0.0.1:0", "--rate", "100")
	waitStarted(t, pr)
	pr.cmd.Process.Signal(syscall.SIGQUIT)
	code, _, _ := pr.wait(t, 10*time.Second)
	stderr := pr.stderr.String()
	if code != ExitCanceled || !strings.Contains(stderr, "goroutine ") || !strings.Contains(stderr, "quit: canceling") {
		t.Fatalf("exit %d, want 130 with goroutine stacks and the cancel; stderr:\n%.2000s", code, stderr)
	}
}

// A second SIGQUIT prints every goroutine's stack and exits at once with
// 130, whatever the job is doing.
func TestSecondSigquitPrintsStacks(t *testing.T) {
	exited := make(chan int, 1)
	exitNow = func(code int) { exited <- code }
	defer func() { exitNow = os.Exit }()
	t.Setenv("WEIR_TRACEBACK", "")
	var errOut lockedBuffer
	ctx, stop := interruptible(&errOut)
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGQUIT)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGQUIT did not cancel")
	}
	if strings.Contains(errOut.String(), "goroutine ") {
		t.Fatalf("the first SIGQUIT printed stacks: %s", errOut.String())
	}
	syscall.Kill(os.Getpid(), syscall.SIGQUIT)
	select {
	case code := <-exited:
		if code != ExitCanceled {
			t.Fatalf("exit code %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGQUIT did not exit")
	}
	if !strings.Contains(errOut.String(), "goroutine ") || !strings.Contains(errOut.String(), "TestSecondSigquitPrintsStacks") {
		t.Errorf("the second SIGQUIT did not print the goroutines' stacks: %.500s", errOut.String())
	}
}

// signalIgnoredHere tells whether this process ignores sig; its children
// inherit that, and weir keeps an ignored SIGHUP ignored (nohup).
func signalIgnoredHere(t *testing.T, sig syscall.Signal) bool {
	t.Helper()
	return signal.Ignored(sig)
}
