package testseed

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// New returns the seed for t and logs how to rerun with it.
func New(t testing.TB) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("WEIR_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("WEIR_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (rerun with WEIR_SEED=%d)", s, s)
	return s
}

// Rand returns a generator seeded by New, with stream selecting one of
// several independent sequences for the same seed.
func Rand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(New(t), stream))
}
