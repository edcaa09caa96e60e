package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ4 checks q4 against the SQL computed over the whole input: join
// every bid with its auction (dateTime between the auction's dateTime and
// expires, both included), the maximum price per auction, then the
// average of the maxima per category, truncated as Java's long division.
func TestQ4(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q4", cfg, q4Reference(testEvents(t, cfg)))
}

func q4Reference(events []nexmark.Event) []query.Row {
	auctions := map[int64]nexmark.Auction{}
	for _, e := range events {
		if e.Type == nexmark.AuctionEvent {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	maxPrice := map[int64]int64{}
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		a, ok := auctions[b.Auction]
		if !ok || b.DateTime < a.DateTime || b.DateTime > a.Expires {
			continue
		}
		if m, seen := maxPrice[a.ID]; !seen || b.Price > m {
			maxPrice[a.ID] = b.Price
		}
	}
	sum, count := map[int64]int64{}, map[int64]int64{}
	for id, m := range maxPrice {
		c := auctions[id].Category
		sum[c] += m
		count[c]++
	}
	var want []query.Row
	for c, s := range sum {
		want = append(want, query.Row{c, s / count[c]})
	}
	return want
}
