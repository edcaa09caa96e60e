package query_test

import (
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// Test helpers of q15, q16, q17 and q20: the SQL's functions, written
// plainly, independently of the queries' code.

// qeTestDate is DATE_FORMAT(ms, layout) on a zone-less TIMESTAMP(3) (UTC).
func qeTestDate(ms int64, layout string) string {
	return time.UnixMilli(ms).UTC().Format(layout)
}

// qeTestLevels are the FILTER clauses of q15 to q17, in the order of their
// columns: none (the total), price < 10000, 10000 <= price < 1000000,
// price >= 1000000.
var qeTestLevels = [4]func(price int64) bool{
	func(int64) bool { return true },
	func(p int64) bool { return p < 10000 },
	func(p int64) bool { return p >= 10000 && p < 1000000 },
	func(p int64) bool { return p >= 1000000 },
}

// qeTestBids are the bids among events.
func qeTestBids(events []nexmark.Event) []nexmark.Bid {
	var bids []nexmark.Bid
	for _, e := range events {
		if e.Type == nexmark.BidEvent {
			bids = append(bids, e.Bid)
		}
	}
	return bids
}

// qeTestDistinctCounts computes count(*), count(distinct bidder) and
// count(distinct auction), each without and with the three FILTER clauses,
// over one group's bids, in the result tables' column order.
func qeTestDistinctCounts(bids []nexmark.Bid) []any {
	var counts [12]int64
	for l, in := range qeTestLevels {
		bidders := map[int64]bool{}
		auctions := map[int64]bool{}
		for _, b := range bids {
			if in(b.Price) {
				counts[l]++
				bidders[b.Bidder] = true
				auctions[b.Auction] = true
			}
		}
		counts[4+l] = int64(len(bidders))
		counts[8+l] = int64(len(auctions))
	}
	vals := make([]any, 12)
	for i, c := range counts {
		vals[i] = c
	}
	return vals
}

// qeTestPebble runs the query at parallelism 2 with the Pebble state
// backend and compares its rows with want, as checkQuery does on the heap.
func qeTestPebble(t *testing.T, name string, cfg nexmark.Config, want []query.Row) {
	t.Helper()
	checkQueryWith(t, name, query.Options{Config: cfg, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, want)
}
