package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ7 takes the maximum price of every 10 s tumbling window, then joins
// every bid with every window: a bid matches when its price is the
// window's maximum and its time is in [window_end - 10 s, window_end]. The
// row has the price in the bidder column and the bidder in the price
// column, as Nexmark's INSERT puts them.
func TestQ7(t *testing.T) {
	cfg := testConfig(t)
	events := testEvents(t, cfg)
	maxAt := map[int64]int64{} // window end -> max price
	for _, e := range events {
		if e.Type == nexmark.BidEvent {
			end := floorTo(e.Bid.DateTime, 10_000) + 10_000
			maxAt[end] = max(maxAt[end], e.Bid.Price)
		}
	}
	var want []query.Row
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		for end, m := range maxAt {
			if b.Price == m && end-10_000 <= b.DateTime && b.DateTime <= end {
				want = append(want, query.Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra})
			}
		}
	}
	t.Logf("%d rows for %d windows", len(want), len(maxAt))
	checkQuery(t, "q7", cfg, want)
}
