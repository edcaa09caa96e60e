package query_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// floorTo rounds ts down to a multiple of size (toward minus infinity).
func floorTo(ts, size int64) int64 {
	if r := ts % size; r < 0 {
		return ts - r - size
	} else {
		return ts - r
	}
}

// qbT0 is a time at a multiple of 10 s (and so of 2 s) for hand-made events.
const qbT0 = nexmark.DefaultBaseTime

// qbBid is a hand-made bid event.
func qbBid(auction, bidder, price, ts int64) nexmark.Event {
	return nexmark.Event{Type: nexmark.BidEvent, Bid: nexmark.Bid{Auction: auction, Bidder: bidder, Price: price,
		Channel: "Google", URL: "https://www.nexmark.com/a/b/c/item.htm?query=1", DateTime: ts, Extra: "x"}}
}

// qbCheckEvents runs the query over events, written to a file as `weir
// nexmark generate` writes them, at parallelism 2 with the options o sets
// (state backend), and compares its rows with want.
func qbCheckEvents(t *testing.T, name string, events []nexmark.Event, o query.Options, want []query.Row) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "events.jsonl")
	var b []byte
	for i := range events {
		b = nexmark.AppendJSON(b, &events[i])
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Input, o.Parallelism = in, 2
	checkQueryWith(t, name, o, want)
}

// qbPebble runs the query over the first 6,000 of testConfig's events
// (a minute) on the Pebble state backend; the other tests use the heap one.
func qbPebble(t *testing.T, name string, want func([]nexmark.Event) []query.Row) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Events = 6_000
	events := testEvents(t, cfg)
	qbCheckEvents(t, name, events, query.Options{Config: cfg, StateBackend: "pebble", StateDir: t.TempDir()}, want(events))
}
