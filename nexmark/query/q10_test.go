package query_test

import (
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ10 runs over testConfig's stream, which crosses midnight, so dt
// takes two values and hm wraps from 23:59 to 00:00.
func TestQ10(t *testing.T) {
	cfg := testConfig(t)
	var want []query.Row
	days := map[string]bool{}
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		ts := time.UnixMilli(b.DateTime).UTC()
		dt, hm := ts.Format("2006-01-02"), ts.Format("15:04")
		days[dt] = true
		want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra, dt, hm})
	}
	if len(days) < 2 {
		t.Fatalf("days %v: the stream should cross midnight", days)
	}
	checkQuery(t, "q10", cfg, want)
}
