package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/rest"
	"go.uber.org/goleak"
)

// sourceLine finds the line of this file that ends with marker and returns
// it as a stack shows it, "panicstack_test.go:N": read from the source, so
// that the test does not depend on how the runtime reports lines.
func sourceLine(t *testing.T, marker string) string {
	t.Helper()
	src, err := os.ReadFile("panicstack_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, marker) && !strings.Contains(l, "sourceLine(") {
			return fmt.Sprintf("panicstack_test.go:%d", i+1)
		}
	}
	t.Fatalf("no line ends with %q", marker)
	return ""
}

// A user function's panic fails the job with an error that shows where: the
// panic site first (the nil map write), then the user function that called
// it through a collector, with Weir's frames in between counted, not listed.
// The log has the same stack, and errors.As finds the *failure.Panic.
func TestUserPanicErrorShowsUserFrames(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	var logs bytes.Buffer // the text handler serializes its writes
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	emitted := weir.Process(weir.Sequence(env, 1, 10), weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
		out.Collect(v) // calls Explode
		return nil
	})).Name("Emit")
	weir.Discard(weir.Map(emitted, func(v int64) int64 {
		if v == 5 {
			var seen map[int64]bool
			seen[v] = true // the panic site
		}
		return v
	}).Name("Explode"))
	_, err := env.Execute(context.Background(), "panic-stack")
	if err == nil {
		t.Fatal("the job succeeded; want a failure")
	}
	site, caller := sourceLine(t, "// the panic site"), sourceLine(t, "// calls Explode")
	lines := strings.Split(err.Error(), "\n")
	if len(lines) < 5 || !strings.Contains(lines[0], `operator "Explode"`) || !strings.HasSuffix(lines[0], "panic: assignment to entry in nil map") ||
		!strings.Contains(lines[1], "TestUserPanicErrorShowsUserFrames.func2") || !strings.HasSuffix(lines[2], site) ||
		!strings.Contains(lines[3], "frames in Weir") ||
		!strings.Contains(lines[4], "TestUserPanicErrorShowsUserFrames.func1") || !strings.HasSuffix(lines[5], caller) {
		t.Fatalf("the error does not show the panic site %s, then the caller %s:\n%v", site, caller, err)
	}
	if strings.Contains(err.Error(), "internal/task") || strings.Contains(err.Error(), "runtime.") {
		t.Fatalf("the error lists Weir's task loop or the Go runtime:\n%v", err)
	}
	var p *failure.Panic
	var re runtime.Error
	if !errors.As(err, &p) || !strings.HasSuffix(strings.SplitN(p.Stack, "\n", 3)[1], site) || !errors.As(err, &re) {
		t.Fatalf("errors.As finds no *failure.Panic with the stack, wrapping the runtime.Error: %#v", p)
	}
	if !strings.Contains(logs.String(), "stack=") || !strings.Contains(logs.String(), site) {
		t.Fatalf("the log has no stack with %s:\n%s", site, logs.String())
	}
}

// panicker panics on subtask 0 and blocks in Close on subtask 1 until
// released, which holds the job in FAILING so the REST API can be read.
type panicker struct{ closeBlocker }

func (p *panicker) ProcessElement(ctx weir.Context, v int64, out weir.Collector[int64]) error {
	if p.subtask == 0 {
		<-p.opened1
		var counts map[int64]int
		counts[v]++ // the REST panic site
	}
	return nil
}

// The REST API's exception history carries the panic's stack: the user's
// panic site (file:line) first, without the task loop's frames.
func TestRESTExceptionsShowPanicStack(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	release := make(chan struct{})
	src := weir.Generate(env, -1, 100, func(i int64) int64 { return i })
	weir.Discard(weir.Process[int64, int64](src, &panicker{closeBlocker{release: release, opened1: make(chan struct{})}}).Name("Panics"))
	job, err := env.ExecuteAsync(context.Background(), "panics")
	if err != nil {
		t.Fatal(err)
	}
	site := sourceLine(t, "// the REST panic site")
	c := rest.NewClient(job.RESTAddr(), nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ex, err := c.Exceptions(context.Background(), job.ID())
		if err != nil {
			t.Fatal(err)
		}
		if e := ex.ExceptionHistory.Entries; len(e) > 0 {
			trace := strings.Split(e[0].Stacktrace, "\n")
			if e[0].ExceptionName != "panic" || len(trace) < 4 || !strings.Contains(trace[0], "panic: assignment to entry in nil map") ||
				!strings.Contains(trace[2], "(*panicker).ProcessElement") || !strings.HasSuffix(trace[3], site) ||
				strings.Contains(e[0].Stacktrace, "internal/task") {
				t.Fatalf("exception history entry %s, stacktrace:\n%s\nwant the panic site %s first", e[0].ExceptionName, e[0].Stacktrace, site)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no exception after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if _, err := job.Wait(context.Background()); err == nil {
		t.Fatal("want failure")
	}
}
