package query_test

import (
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ22(t *testing.T) {
	cfg := testConfig(t)
	// SPLIT_INDEX(s, sep, i): commons-lang's
	// splitByWholeSeparatorPreserveAllTokens, element i or NULL.
	splitIndex := func(s, sep string, i int) any {
		if s == "" {
			return nil
		}
		parts := strings.Split(s, sep)
		if i >= len(parts) {
			return nil
		}
		return parts[i]
	}
	var want []query.Row
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel,
			splitIndex(b.URL, "/", 3), splitIndex(b.URL, "/", 4), splitIndex(b.URL, "/", 5)})
	}
	checkQuery(t, "q22", cfg, want)
}
