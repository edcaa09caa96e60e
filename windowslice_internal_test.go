package weir

import (
	"math"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/internal/window"
)

// sliceSpec.start is window.Start with one division: the same for any
// timestamp, length and offset (negative ones, and near the int64 ends).
func TestSliceSpecStartMatchesWindowStart(t *testing.T) {
	r := testseed.Rand(t, 5)
	for i := 0; i < 200000; i++ {
		length := 1 + r.Int64N(1000)
		if r.IntN(10) == 0 {
			length = 1 + r.Int64N(math.MaxInt64/4)
		}
		offset := r.Int64N(4*length) - 2*length
		ts := r.Int64N(100000) - 50000
		switch r.IntN(4) {
		case 0:
			ts = int64(r.Uint64())
		case 1:
			ts = math.MinInt64 + r.Int64N(2*length+1)
		}
		sp := sliceSpec{offset: offset}
		if got, want := sp.start(ts, length, offset%length), window.Start(ts, offset, length); got != want {
			t.Fatalf("start(%d, %d, offset %d) = %d, want %d", ts, length, offset, got, want)
		}
	}
}
