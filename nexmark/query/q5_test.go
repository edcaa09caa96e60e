package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ5 counts the bids per auction in every hopping window (starts every
// 2 s, 10 s long) a bid falls in, then keeps per window the auctions with
// the largest count.
func TestQ5(t *testing.T) {
	cfg := testConfig(t)
	type key struct{ start, auction int64 }
	counts := map[key]int64{}
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		ts := e.Bid.DateTime
		for s := floorTo(ts, 2_000); s > ts-10_000; s -= 2_000 {
			counts[key{s, e.Bid.Auction}]++
		}
	}
	maxOf := map[int64]int64{}
	for k, n := range counts {
		maxOf[k.start] = max(maxOf[k.start], n)
	}
	var want []query.Row
	for k, n := range counts {
		if n >= maxOf[k.start] {
			want = append(want, query.Row{k.auction, n})
		}
	}
	checkQuery(t, "q5", cfg, want)
}
