package query_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
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
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	var b []byte
	for i := range events {
		b = nexmark.AppendJSON(b, &events[i])
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Input, o.Output, o.Parallelism = in, filepath.Join(dir, "out.jsonl"), 2
	if _, err := query.Run(context.Background(), q, o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		got = append(got, sc.Text())
	}
	wantLines := make([]string, len(want))
	for i, r := range want {
		wantLines[i] = query.JSON(q.Columns, r)
	}
	slices.Sort(got)
	slices.Sort(wantLines)
	if !slices.Equal(got, wantLines) {
		t.Errorf("%s: %d rows, want %d; %s", name, len(got), len(wantLines), firstDiff(got, wantLines))
	}
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
