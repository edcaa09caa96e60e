package query_test

import (
	"fmt"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ13: the reference joins each bid with the rows of Nexmark's side
// input file as SideInputGenerator writes them ("i,i" for i in [0, 10000)),
// parsed as CSV, on auction mod 10000 = key.
func TestQ13(t *testing.T) {
	cfg := testConfig(t)
	side := map[int64]string{}
	for i := 0; i < 10000; i++ {
		var key int64
		var value string
		line := fmt.Sprintf("%d,%d", i, i)
		if _, err := fmt.Sscanf(line, "%d,%s", &key, &value); err != nil {
			t.Fatal(err)
		}
		side[key] = value
	}
	var want []query.Row
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		if v, ok := side[b.Auction%10000]; ok {
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.DateTime, v})
		}
	}
	checkQuery(t, "q13", cfg, want)
}
