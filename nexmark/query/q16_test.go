package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ16 checks q16's final table (a row per channel and day) against
// the GROUP BY computed over the bids.
func TestQ16(t *testing.T) {
	cfg := testConfig(t)
	type group struct{ channel, day string }
	groups := map[group][]nexmark.Bid{}
	for _, b := range qeTestBids(testEvents(t, cfg)) {
		g := group{b.Channel, qeTestDate(b.DateTime, "2006-01-02")}
		groups[g] = append(groups[g], b)
	}
	var want []query.Row
	for g, bids := range groups {
		minute := ""
		for _, b := range bids {
			minute = max(minute, qeTestDate(b.DateTime, "15:04"))
		}
		want = append(want, append(query.Row{g.channel, g.day, minute}, qeTestDistinctCounts(bids)...))
	}
	checkQuery(t, "q16", cfg, want)
	qeTestPebble(t, "q16", cfg, want)
}
