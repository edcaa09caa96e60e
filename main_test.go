package weir_test

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seed returns the test's random seed: WEIR_SEED if set, else a fresh one,
// and logs it so a failure can be reproduced.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("WEIR_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("WEIR_SEED: %v", err)
		}
	}
	t.Logf("seed %d (rerun with WEIR_SEED=%d)", s, s)
	return s
}

var regexpSubtask = regexp.MustCompile(`\([12]/2\)`)
