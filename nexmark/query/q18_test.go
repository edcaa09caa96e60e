package query_test

import (
	"os"
	"path/filepath"
	"strings"
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

// TestQ18LongBids: bids too long for q18's record in state (their
// encoding kept as a string beside it) replace and are replaced by short
// ones, from a file, with the heap and the Pebble backend.
func TestQ18LongBids(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bids.jsonl")
	var lines []byte
	last := map[[2]int64]nexmark.Bid{}
	for i := range 40 {
		b := nexmark.Bid{Auction: 1000 + int64(i%3), Bidder: 2000 + int64(i%2), Price: int64(100 + i), Channel: "Google",
			URL: "https://www.nexmark.com/a/b/c/item.htm?query=1", DateTime: nexmark.DefaultBaseTime + int64(i/4)*1000, Extra: "short"}
		if i%5 < 2 {
			b.Extra = strings.Repeat("long", 60+i)
		}
		lines = nexmark.AppendJSON(lines, &nexmark.Event{Type: nexmark.BidEvent, Bid: b})
		last[[2]int64{b.Bidder, b.Auction}] = b
	}
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	var want []query.Row
	for _, b := range last {
		want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
	}
	checkQueryWith(t, "q18", query.Options{Input: path, Parallelism: 2}, want)
	checkQueryWith(t, "q18", query.Options{Input: path, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, want)
}
