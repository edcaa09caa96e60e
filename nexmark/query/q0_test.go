package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ0(t *testing.T) {
	cfg := testConfig(t)
	var want []query.Row
	for _, e := range testEvents(t, cfg) {
		if e.Type == nexmark.BidEvent {
			b := e.Bid
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
		}
	}
	checkQuery(t, "q0", cfg, want)
}
