package query_test

import (
	"math/big"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ1(t *testing.T) {
	cfg := testConfig(t)
	var want []query.Row
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		// 0.908 * price exactly, then the nearest double.
		euros, _ := new(big.Rat).Mul(big.NewRat(908, 1000), new(big.Rat).SetInt64(b.Price)).Float64()
		want = append(want, query.Row{b.Auction, b.Bidder, euros, b.DateTime, b.Extra})
	}
	checkQuery(t, "q1", cfg, want)
}
