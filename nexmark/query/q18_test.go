package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ18: the reference keeps, per (bidder, auction), the bid with the
// largest dateTime, the later one in event order on a tie.
func TestQ18(t *testing.T) {
	cfg := testConfig(t)
	type pair struct{ bidder, auction int64 }
	last := map[pair]nexmark.Bid{}
	bids := 0
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		bids++
		k := pair{e.Bid.Bidder, e.Bid.Auction}
		if p, ok := last[k]; !ok || p.DateTime <= e.Bid.DateTime {
			last[k] = e.Bid
		}
	}
	if len(last) == bids {
		t.Fatal("no pair of bidder and auction has two bids: the test would not see a retraction")
	}
	var want []query.Row
	for _, b := range last {
		want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
	}
	checkQuery(t, "q18", cfg, want)
	checkQueryWith(t, "q18", query.Options{Config: cfg, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, want)
}
