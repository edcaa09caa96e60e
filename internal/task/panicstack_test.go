package task

import (
	"runtime"
	"strings"
	"testing"
)

func frame(fn, file string, line int) runtime.Frame {
	return runtime.Frame{Function: fn, File: file, Line: line}
}

// The recovery's frames and the runtime's way of raising the panic are cut,
// the panic site comes first, Weir's frames between the user's are counted,
// and the task loop ends the stack.
func TestFormatPanicStack(t *testing.T) {
	const mod = "github.com/weirhq/weir"
	frames := []runtime.Frame{
		frame(mod+"/internal/task.panicStack", "/w/internal/task/panicstack.go", 30),
		frame(mod+"/internal/task.(*Task).failure", "/w/internal/task/task.go", 285),
		frame(mod+"/internal/task.(*Task).Run.func1", "/w/internal/task/task.go", 209),
		frame("runtime.gopanic", "/go/src/runtime/panic.go", 783),
		frame("runtime.mapassign_faststr", "/go/src/runtime/map.go", 200),
		frame("example.com/job.main.func2", "/u/job/main.go", 41),
		frame(mod+"/internal/operator.(*mapOp[...]).Process", "/w/internal/operator/map.go", 20),
		frame(mod+".(*collector[go.shape.int64]).Collect", "/w/collector.go", 12),
		frame("runtime.call16", "/go/src/runtime/asm_amd64.s", 1),
		frame("example.com/job.main.func1", "/u/job/main.go", 35),
		frame(mod+".flatMap[...].func1", "/w/transform.go", 50),
		frame(mod+"/internal/task.(*Task).loop", "/w/internal/task/loop.go", 90),
		frame("example.com/job.notReached", "/u/job/main.go", 1),
		frame("runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700),
	}
	want := "example.com/job.main.func2\n\t/u/job/main.go:41\n" +
		"\t... 2 frames in Weir\n" +
		"example.com/job.main.func1\n\t/u/job/main.go:35"
	if got := formatPanicStack(frames); got != want {
		t.Fatalf("stack:\n%s\nwant:\n%s", got, want)
	}
}

// A panic raised inside Weir (a state handle used wrongly, a bug) keeps its
// site; a test file of the root package and a built-in job are the user's
// code, a connector is Weir's.
func TestFormatPanicStackKeepsWeirPanicSiteAndRootTests(t *testing.T) {
	const mod = "github.com/weirhq/weir"
	frames := []runtime.Frame{
		frame("runtime.gopanic", "/go/src/runtime/panic.go", 783),
		frame(mod+"/internal/statebackend/heap.(*table).get", "/w/internal/statebackend/heap/table.go", 77),
		frame(mod+"/internal/statebackend/heap.(*Backend).Value", "/w/internal/statebackend/heap/backend.go", 10),
		frame(mod+"/state.(*valueState[...]).Value", "/w/state/value.go", 40),
		frame(mod+".TestThing.func3", "/w/thing_test.go", 99),
		frame(mod+"/connector/datagen.(*reader[...]).PollNext", "/w/connector/datagen/datagen.go", 424),
		frame(mod+"/jobs/wordcount.tokenize", "/w/jobs/wordcount/wordcount.go", 12),
		frame(mod+"/internal/task.(*Task).loop", "/w/internal/task/loop.go", 90),
	}
	want := mod + "/internal/statebackend/heap.(*table).get\n\t/w/internal/statebackend/heap/table.go:77\n" +
		"\t... 2 frames in Weir\n" +
		mod + ".TestThing.func3\n\t/w/thing_test.go:99\n" +
		"\t... 1 frame in Weir\n" +
		mod + "/jobs/wordcount.tokenize\n\t/w/jobs/wordcount/wordcount.go:12"
	if got := formatPanicStack(frames); got != want {
		t.Fatalf("stack:\n%s\nwant:\n%s", got, want)
	}
}

// Deep recursion in user code is cut at the frame bound, long names at the
// byte bound, each with a last line that says so.
func TestFormatPanicStackBounded(t *testing.T) {
	deep := []runtime.Frame{frame("runtime.gopanic", "panic.go", 1)}
	for i := 0; i < 3*maxStackFrames; i++ {
		deep = append(deep, frame("example.com/job.recurse", "/u/job/main.go", 10))
	}
	got := formatPanicStack(deep)
	if n := strings.Count(got, "example.com/job.recurse\n"); n != maxStackFrames || !strings.HasSuffix(got, "\t... more frames left out") {
		t.Fatalf("%d frames kept (want %d) and the end is %q", n, maxStackFrames, got[len(got)-40:])
	}
	long := []runtime.Frame{frame("runtime.gopanic", "panic.go", 1)}
	for i := 0; i < 8; i++ {
		long = append(long, frame("example.com/job."+strings.Repeat("x", 1000), "/u/job/main.go", 10))
	}
	if got := formatPanicStack(long); len(got) > maxStackBytes || !strings.HasSuffix(got, "\t... more frames left out") {
		t.Fatalf("%d bytes (bound %d), ends %q", len(got), maxStackBytes, got[len(got)-40:])
	}
}

func TestFuncPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"main.main":                             "main",
		"runtime.gopanic":                       "runtime",
		"github.com/weirhq/weir.Map[...].func1": "github.com/weirhq/weir",
		"github.com/weirhq/weir.(*c[go.shape.struct { a/b.c }]).Collect": "github.com/weirhq/weir",
		"github.com/weirhq/weir/internal/task.(*Task).Run.func1":         "github.com/weirhq/weir/internal/task",
		"gopkg.in/yaml%2ev3.unmarshal":                                   "gopkg.in/yaml%2ev3", // the linker escapes the dot
		"github.com/weirhq/weir_test.TestX.func1":                        "github.com/weirhq/weir_test",
	} {
		if got := funcPackage(fn); got != want {
			t.Errorf("funcPackage(%q) = %q, want %q", fn, got, want)
		}
	}
}
