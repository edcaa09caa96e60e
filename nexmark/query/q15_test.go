package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ15 checks q15's final table (one row per day: the test's events
// cross midnight, so two) against the GROUP BY computed over the bids.
func TestQ15(t *testing.T) {
	cfg := testConfig(t)
	groups := map[string][]nexmark.Bid{}
	for _, b := range qeTestBids(testEvents(t, cfg)) {
		day := qeTestDate(b.DateTime, "2006-01-02")
		groups[day] = append(groups[day], b)
	}
	if len(groups) != 2 {
		t.Fatalf("%d days in the test's bids, want 2", len(groups))
	}
	var want []query.Row
	for day, bids := range groups {
		want = append(want, append(query.Row{day}, qeTestDistinctCounts(bids)...))
	}
	checkQuery(t, "q15", cfg, want)
	qeTestPebble(t, "q15", cfg, want)
}
