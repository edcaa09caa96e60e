package query

import (
	"math"
	"testing"
)

// TestP1Q16Key checks that q16's string key gives back its channel and
// day, for channels and days of any size.
func TestP1Q16Key(t *testing.T) {
	for _, c := range []string{"", "Google", "channel-9999", "a channel name longer than the key's buffer"} {
		for _, d := range []int64{math.MinInt64, -1, 0, 19_000, 20_000, 20_790, 28_000, math.MaxInt64} {
			k := p1Q16Key(c, d)
			if gd, gc := p1Q16SplitKey(k); gd != d || gc != c {
				t.Errorf("p1Q16Key(%q, %d) = %q, which splits into %d, %q", c, d, k, gd, gc)
			}
		}
	}
	if k := p1Q16Key("channel-9999", 20_790); len(k) > 14 {
		t.Errorf("the key of a generator's channel and day is %d bytes, want at most 14", len(k))
	}
}
