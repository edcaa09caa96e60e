package query_test

import (
	"math"
	"testing"

	"github.com/weirhq/weir/nexmark/query"
)

// TestQ17 checks q17's final table (a row per auction and day) against the
// GROUP BY computed over the bids.
func TestQ17(t *testing.T) {
	cfg := testConfig(t)
	type group struct {
		auction int64
		day     string
	}
	type stats struct {
		counts             [4]int64
		min, max, sum, avg int64
	}
	groups := map[group]*stats{}
	for _, b := range qeTestBids(testEvents(t, cfg)) {
		g := group{b.Auction, qeTestDate(b.DateTime, "2006-01-02")}
		s := groups[g]
		if s == nil {
			s = &stats{min: math.MaxInt64, max: math.MinInt64}
			groups[g] = s
		}
		for l, in := range qeTestLevels {
			if in(b.Price) {
				s.counts[l]++
			}
		}
		s.min = min(s.min, b.Price)
		s.max = max(s.max, b.Price)
		s.sum += b.Price
	}
	var want []query.Row
	for g, s := range groups {
		avg := int64(float64(s.sum) / float64(s.counts[0])) // truncated toward zero, as Java's long division
		want = append(want, query.Row{g.auction, g.day, s.counts[0], s.counts[1], s.counts[2], s.counts[3], s.min, s.max, avg, s.sum})
	}
	checkQuery(t, "q17", cfg, want)
	qeTestPebble(t, "q17", cfg, want)
}
