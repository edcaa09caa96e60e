package query_test

import (
	"sort"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ19: the reference sorts each auction's bids by price, highest
// first, equal prices by dateTime and then event order, and ranks the
// first ten.
func TestQ19(t *testing.T) {
	cfg := testConfig(t)
	byAuction := map[int64][]nexmark.Bid{}
	for _, e := range testEvents(t, cfg) {
		if e.Type == nexmark.BidEvent {
			byAuction[e.Bid.Auction] = append(byAuction[e.Bid.Auction], e.Bid)
		}
	}
	var want []query.Row
	long := 0
	for _, bids := range byAuction {
		sort.SliceStable(bids, func(i, j int) bool {
			if bids[i].Price != bids[j].Price {
				return bids[i].Price > bids[j].Price
			}
			return bids[i].DateTime < bids[j].DateTime
		})
		if len(bids) > 10 {
			long++
			bids = bids[:10]
		}
		for i, b := range bids {
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra, int64(i + 1)})
		}
	}
	if long == 0 {
		t.Fatal("no auction has more than 10 bids: the test would not see a bid leave the top 10")
	}
	checkQuery(t, "q19", cfg, want)
	checkQueryWith(t, "q19", query.Options{Config: cfg, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, want)
}
