package query_test

import (
	"slices"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ11 checks the sessions against a sweep over each bidder's bid times
// in order: a bid at most 10 s after the session's last bid (its end, last
// + 10 s, included: Flink merges windows that touch) extends it.
func TestQ11(t *testing.T) {
	cfg := testConfig(t)
	times := map[int64][]int64{}
	for _, e := range testEvents(t, cfg) {
		if e.Type == nexmark.BidEvent {
			times[e.Bid.Bidder] = append(times[e.Bid.Bidder], e.Bid.DateTime)
		}
	}
	const gap = 10_000
	var want []query.Row
	for bidder, ts := range times {
		slices.Sort(ts)
		start, end, n := ts[0], ts[0]+gap, int64(1)
		for _, x := range ts[1:] {
			if x <= end {
				end = max(end, x+gap)
				n++
				continue
			}
			want = append(want, query.Row{bidder, n, start, end})
			start, end, n = x, x+gap, 1
		}
		want = append(want, query.Row{bidder, n, start, end})
	}
	checkQuery(t, "q11", cfg, want)
}
