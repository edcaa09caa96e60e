package task

import (
	"fmt"
	"runtime"
	"strings"
)

// The bounds of the stack a panic's failure carries to the JobManager, its
// exception history and the job's error: past them a last line says that
// more frames were left out. The panic site comes first, so the bounds cut
// deep recursion, never the panic site.
const (
	maxStackFrames = 32
	maxStackBytes  = 4 << 10
)

// weirModule is the module whose packages are Weir's own frames, but for
// its test files and the jobs written on its API (userTrees).
const weirModule = "github.com/weirhq/weir"

// userTrees are the packages of weirModule that hold jobs, user code like
// any other (the built-in jobs and the examples).
var userTrees = []string{weirModule + "/jobs", weirModule + "/examples"}

// panicStack returns where the panic being recovered happened, for
// failure.Panic.Stack; it must run in a function deferred by the panicking
// goroutine. The frames from runtime.gopanic up are the recovery's own; the
// Go runtime's frames right below are how the runtime raised it (a nil map
// write, an index out of range), so the first frame after them is the panic
// site, kept whoever owns it. After it the runtime's frames are dropped,
// Weir's own (isWeir) are counted, and the first frame of this package (the
// task loop calling the operator) ends the stack.
func panicStack() string {
	pcs := make([]uintptr, 2*maxStackFrames+16)
	pcs = pcs[:runtime.Callers(1, pcs)]
	var frames []runtime.Frame
	it := runtime.CallersFrames(pcs)
	for {
		f, more := it.Next()
		frames = append(frames, f)
		if !more {
			break
		}
	}
	return formatPanicStack(frames)
}

// formatPanicStack is panicStack on frames given innermost first.
func formatPanicStack(frames []runtime.Frame) string {
	for i, f := range frames {
		if f.Function == "runtime.gopanic" {
			frames = frames[i+1:]
			break
		}
	}
	for len(frames) > 0 && isRuntime(frames[0]) {
		frames = frames[1:]
	}
	var b strings.Builder
	kept, weir := 0, 0
	for i, f := range frames {
		if i > 0 && (isTaskLoop(f) || isRuntime(f)) {
			if isTaskLoop(f) {
				break
			}
			continue
		}
		if i > 0 && isWeir(f) {
			weir++
			continue
		}
		line := fmt.Sprintf("%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if weir > 0 {
			line = weirFrames(weir) + line
			weir = 0
		}
		if kept == maxStackFrames || b.Len()+len(line) > maxStackBytes {
			b.WriteString("\t... more frames left out")
			return b.String()
		}
		b.WriteString(line)
		kept++
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// isRuntime: a frame of the Go runtime (not runtime/debug and the like).
func isRuntime(f runtime.Frame) bool {
	return funcPackage(f.Function) == "runtime"
}

// isTaskLoop: a frame of this package, which calls the operators.
func isTaskLoop(f runtime.Frame) bool {
	return funcPackage(f.Function) == weirModule+"/internal/task"
}

// isWeir: a frame of Weir's module, outside its test files and userTrees.
func isWeir(f runtime.Frame) bool {
	p := funcPackage(f.Function)
	if !inTree(p, weirModule) || strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, u := range userTrees {
		if inTree(p, u) {
			return false
		}
	}
	return true
}

// inTree: package p is root or below it.
func inTree(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// funcPackage is the import path of a function's package, from its
// qualified name ("example.com/a/b.(*T[...]).M.func1" is "example.com/a/b").
func funcPackage(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i] // type arguments may hold dots and slashes
	}
	slash := strings.LastIndexByte(fn, '/') + 1
	if dot := strings.IndexByte(fn[slash:], '.'); dot >= 0 {
		return fn[:slash+dot]
	}
	return fn
}

// weirFrames is the line standing for n frames of Weir left out.
func weirFrames(n int) string {
	if n == 1 {
		return "\t... 1 frame in Weir\n"
	}
	return fmt.Sprintf("\t... %d frames in Weir\n", n)
}
