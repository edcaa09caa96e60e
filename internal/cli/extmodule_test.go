package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// A connector written in a separate module (testdata/extconnector: a source
// and a two-phase-commit sink on the public contracts only, and a job using
// them) builds against Weir and passes the kill test: killed with SIGKILL
// at random moments and resumed, its committed output is exactly right.
func TestExternalModuleConnector(t *testing.T) {
	bin := buildExternal(t, "./cmd/extjob")
	seed := testseed.New(t)
	for i, unaligned := range []bool{false, true} {
		t.Run(fmt.Sprintf("unaligned=%t", unaligned), func(t *testing.T) {
			killAndResumeProgram(t, rand.New(rand.NewPCG(seed, uint64(i))), unaligned, bin, nil, "in/", "extjob: final checkpoint")
		})
	}
}

// A window trigger (with trigger state) and an evictor written in the
// separate module (testdata/extconnector/windowing.go) run in a job there
// (cmd/exttrigger) and give what a per-key model of them gives.
func TestExternalModuleTriggerAndEvictor(t *testing.T) {
	bin := buildExternal(t, "./cmd/exttrigger")
	const n = 500
	lists := map[int64][]int64{}
	var want []string
	for v := int64(1); v <= n; v++ {
		k := v % 3
		l := append(lists[k], v)
		lists[k] = l
		if len(l) >= 4 || v%10 == 0 { // MarkerTrigger: fire and purge
			var sum int64
			kept := 0
			for _, x := range l {
				if x%2 == 0 { // KeepEvictor
					sum += x
					kept++
				}
			}
			if kept > 0 { // a reduce over nothing emits nothing
				want = append(want, fmt.Sprintf("k%d sum=%d", k, sum))
			}
			lists[k] = nil
		}
	}
	out, err := exec.Command(bin, strconv.Itoa(n)).Output()
	if err != nil {
		t.Fatalf("exttrigger: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d firings, want %d:\ngot  %q\nwant %q", len(got), len(want), got, want)
	}
}

// buildExternal builds pkg of the external module (testdata/extconnector)
// against this checkout of Weir and returns the binary.
func buildExternal(t *testing.T, pkg string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := os.CopyFS(mod, os.DirFS("testdata/extconnector")); err != nil {
		t.Fatal(err)
	}
	gomod := fmt.Sprintf("module example.com/extconnector\n\ngo 1.26\n\nrequire github.com/weirhq/weir v0.0.0\n\nreplace github.com/weirhq/weir => %s\n", root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	// Weir's sums cover every module the connector needs.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mod, "go.sum"), sums, 0o644)
	bin := filepath.Join(mod, filepath.Base(pkg))
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-mod=mod", "-o", bin, pkg)
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the external module: %v\n%s", err, out)
	}
	return bin
}

// A job in a separate module whose function panics (cmd/extpanic) ends with
// an error that shows the user's frames, file and line, the panic site
// first, and none of Weir's or the Go runtime's frames by name; its log at
// info level carries the same stack.
func TestExternalModulePanicShowsUserFrames(t *testing.T) {
	bin := buildExternal(t, "./cmd/extpanic")
	src, err := os.ReadFile("testdata/extconnector/cmd/extpanic/main.go")
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(marker string) string {
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasSuffix(l, marker) {
				return fmt.Sprintf("extpanic/main.go:%d", i+1)
			}
		}
		t.Fatalf("no line ends with %q", marker)
		return ""
	}
	site, call := lineOf("// the panic site"), lineOf("// the call")
	cmd := exec.Command(bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("extpanic succeeded; stderr:\n%s", stderr.String())
	}
	out := stderr.String()
	i := strings.Index(out, "panic: assignment to entry in nil map\n")
	if i < 0 {
		t.Fatalf("no job error ending in the panic:\n%s", out)
	}
	want := fmt.Sprintf("main.count\n\t.*%s\nmain.main.func1\n\t.*%s\n", regexp.QuoteMeta(site), regexp.QuoteMeta(call))
	trace := out[i+len("panic: assignment to entry in nil map\n"):]
	if !regexp.MustCompile(`^` + want + `$`).MatchString(trace) {
		t.Fatalf("the error's stack is not the panic site %s then the call %s:\n%s", site, call, trace)
	}
	if !strings.Contains(out, "stack=") || !strings.Contains(out[:i], site) {
		t.Fatalf("the log has no stack with %s:\n%s", site, out)
	}
}
