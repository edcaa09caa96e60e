package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/weirhq/weir"
)

// No built-in job panics in its own code (bad input fails with an error),
// so this runs a job of its own, as `weir run` runs a built-in one, and
// checks the message the command prints for its error: the failure on the
// first line, then the user's panic site, file and line.
func TestFailureMessageShowsUserPanicSite(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	weir.Discard(weir.Map(weir.Sequence(env, 1, 10), func(v int64) int64 {
		if v == 3 {
			var m map[int64]int64
			m[v] = v // the CLI panic site
		}
		return v
	}).Name("Explode"))
	_, err := env.Execute(context.Background(), "cli-panic")
	if err == nil {
		t.Fatal("the job succeeded; want a failure")
	}
	src, rerr := os.ReadFile("panic_test.go")
	if rerr != nil {
		t.Fatal(rerr)
	}
	site := ""
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, "m[v] = v // the CLI panic site") {
			site = fmt.Sprintf("panic_test.go:%d", i+1)
		}
	}
	lines := strings.Split(failureMessage(err), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], `weir: job "cli-panic"`) || !strings.HasSuffix(lines[0], "panic: assignment to entry in nil map") ||
		!strings.Contains(lines[1], "TestFailureMessageShowsUserPanicSite") || !strings.HasSuffix(lines[2], site) {
		t.Fatalf("the message does not show the panic site %s under the failure:\n%s", site, failureMessage(err))
	}
}
