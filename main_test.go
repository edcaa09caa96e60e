package weir_test

import (
	"regexp"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, ignoreSignalRouter) }

// ignoreSignalRouter lets tests that run the CLI in-process check for leaks:
// the CLI's signal router lives as long as the process, by design.
var ignoreSignalRouter = goleak.IgnoreTopFunction("github.com/weirhq/weir/internal/cli.routeSignals")

// seed returns the test's random seed (see internal/testseed).
func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

var regexpSubtask = regexp.MustCompile(`\([12]/2\)`)
