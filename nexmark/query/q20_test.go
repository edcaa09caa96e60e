package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ20 checks q20's rows against the inner join of all the bids with
// all the auctions of category 10, whatever their order in the stream.
func TestQ20(t *testing.T) {
	cfg := testConfig(t)
	events := testEvents(t, cfg)
	auctions := map[int64][]nexmark.Auction{}
	at := map[int64]int{} // the index of an auction among events
	for n, e := range events {
		if e.Type == nexmark.AuctionEvent && e.Auction.Category == 10 {
			auctions[e.Auction.ID] = append(auctions[e.Auction.ID], e.Auction)
			at[e.Auction.ID] = n
		}
	}
	var want []query.Row
	before := 0 // bids joined with an auction that came after them
	for n, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		for _, a := range auctions[b.Auction] {
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra,
				a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra})
			if at[a.ID] > n {
				before++
			}
		}
	}
	if before == 0 {
		t.Fatalf("no bid comes before its auction: the test would not check the join's bid state")
	}
	checkQuery(t, "q20", cfg, want)
	qeTestPebble(t, "q20", cfg, want)
}
