package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ9 checks q9 against the SQL computed over the whole input: every
// bid joined with its auction (dateTime between the auction's dateTime and
// expires, both included), and per auction the row of its highest bid,
// the earliest of equal highest bids (the first in the input of equal
// ones).
func TestQ9(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q9", cfg, q9Reference(testEvents(t, cfg)))
}

// TestQ9DefaultRate runs q9 at Nexmark's rate of 10 M events/s, where
// auctions last 1 ms and bids on auctions that have not started yet come
// in the same millisecond as them, so they join (a bid before its auction
// at parallelism 1 too).
func TestQ9DefaultRate(t *testing.T) {
	cfg := testConfig(t)
	cfg.EventsPerSecond = nexmark.DefaultConfig().EventsPerSecond
	events := testEvents(t, cfg)
	seen, early := map[int64]bool{}, 0
	for _, e := range events {
		switch e.Type {
		case nexmark.AuctionEvent:
			seen[e.Auction.ID] = true
		case nexmark.BidEvent:
			if !seen[e.Bid.Auction] {
				early++
			}
		}
	}
	if early == 0 {
		t.Fatal("no bid comes before its auction; the test would not test that")
	}
	checkQuery(t, "q9", cfg, q9Reference(events))
}

// TestQ9Pebble runs q9 on the Pebble state backend.
func TestQ9Pebble(t *testing.T) {
	cfg := testConfig(t)
	checkQueryWith(t, "q9", query.Options{Config: cfg, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, q9Reference(testEvents(t, cfg)))
}

func q9Reference(events []nexmark.Event) []query.Row {
	auctions := map[int64]nexmark.Auction{}
	for _, e := range events {
		if e.Type == nexmark.AuctionEvent {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	top := map[int64]nexmark.Bid{}
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		a, ok := auctions[b.Auction]
		if !ok || b.DateTime < a.DateTime || b.DateTime > a.Expires {
			continue
		}
		if cur, seen := top[a.ID]; !seen || b.Price > cur.Price || b.Price == cur.Price && b.DateTime < cur.DateTime {
			top[a.ID] = b
		}
	}
	var want []query.Row
	for id, b := range top {
		a := auctions[id]
		want = append(want, query.Row{a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra,
			b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
	}
	return want
}
