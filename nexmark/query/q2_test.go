package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ2(t *testing.T) {
	cfg := testConfig(t)
	var want []query.Row
	for _, e := range testEvents(t, cfg) {
		if e.Type == nexmark.BidEvent && e.Bid.Auction/123*123 == e.Bid.Auction {
			want = append(want, query.Row{e.Bid.Auction, e.Bid.Price})
		}
	}
	if len(want) < 10 {
		t.Fatalf("only %d bids selected: too few to test", len(want))
	}
	checkQuery(t, "q2", cfg, want)
}
