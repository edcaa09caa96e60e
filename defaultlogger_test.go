package weir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weirhq/weir"
)

const defaultLoggerChild = "WEIR_DEFAULT_LOGGER_CHILD"

// The child of TestDefaultLoggerSaysWhyAJobRestarts: a job with no Logger
// whose map fails twice, then succeeds.
func TestDefaultLoggerChild(t *testing.T) {
	if os.Getenv(defaultLoggerChild) == "" {
		t.Skip("run by TestDefaultLoggerSaysWhyAJobRestarts in a process of its own")
	}
	var failures atomic.Int32
	env := weir.NewEnvironment(weir.Config{Parallelism: 1,
		Restart: map[string]string{"restart-strategy.type": "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "5", "restart-strategy.fixed-delay.delay": "0 ms"}})
	weir.Discard(weir.Map(weir.Sequence(env, 1, 10), func(v int64) int64 {
		if v == 5 && failures.Add(1) <= 2 {
			panic(errors.New("the user's map failed on purpose"))
		}
		return v
	}))
	if _, err := env.Execute(context.Background(), "restarts"); err != nil {
		fmt.Fprintln(os.Stderr, "JOB FAILED:", err)
		os.Exit(1)
	}
}

// A job without a Logger says on standard error why it restarts (the
// first tutorial user's job restarted forever and printed nothing), and
// only warnings: no informational lines.
func TestDefaultLoggerSaysWhyAJobRestarts(t *testing.T) {
	if os.Getenv(defaultLoggerChild) != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultLoggerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), defaultLoggerChild+"=1")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, errb.String())
	}
	msg := errb.String()
	if n := strings.Count(msg, "restarting the job"); n != 2 {
		t.Errorf("%d lines say the job restarts, want 2:\n%s", n, msg)
	}
	if !strings.Contains(msg, "the user's map failed on purpose") {
		t.Errorf("the log does not say why:\n%s", msg)
	}
	if strings.Contains(msg, "level=INFO") {
		t.Errorf("the default log has informational lines:\n%s", msg)
	}
}
