package weir_test

import (
	"regexp"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seed returns the test's random seed (see internal/testseed).
func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

var regexpSubtask = regexp.MustCompile(`\([12]/2\)`)
