package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// q7Want takes the maximum price of every 10 s tumbling window, then joins
// every bid with every window: a bid matches when its price is the
// window's maximum and its time is in [window_end - 10 s, window_end]. The
// row has the price in the bidder column and the bidder in the price
// column, as Nexmark's INSERT puts them.
func q7Want(events []nexmark.Event) []query.Row {
	maxAt := map[int64]int64{} // window end -> max price
	for _, e := range events {
		if e.Type == nexmark.BidEvent {
			end := floorTo(e.Bid.DateTime, 10_000) + 10_000
			maxAt[end] = max(maxAt[end], e.Bid.Price)
		}
	}
	var want []query.Row
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		for end, m := range maxAt {
			if b.Price == m && end-10_000 <= b.DateTime && b.DateTime <= end {
				want = append(want, query.Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra})
			}
		}
	}
	return want
}

func TestQ7(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q7", cfg, q7Want(testEvents(t, cfg)))
}

// TestQ7Edges: ties at a window's maximum, a bid at exactly a window's end
// (it matches that window's maximum and, as the maximum of the next
// window, that one too: two rows), a bid at a window's end above that
// window's maximum, and bids below the maximum that come first.
func TestQ7Edges(t *testing.T) {
	events := []nexmark.Event{
		qbBid(1, 11, 300, qbT0),
		qbBid(1, 12, 500, qbT0+1_000),
		qbBid(1, 13, 500, qbT0+5_000),  // a tie
		qbBid(1, 14, 500, qbT0+10_000), // window 0's end: matches window 0 and, as its max, window 1
		qbBid(1, 15, 400, qbT0+12_000),
		qbBid(1, 16, 900, qbT0+20_000), // window 1's end, above its max: only window 2's max
		qbBid(1, 17, 800, qbT0+25_000),
		qbBid(1, 18, 100, qbT0+60_000),
	}
	want := q7Want(events)
	if len(want) != 6 {
		t.Fatalf("the reference gives %d rows, want 6: %v", len(want), want)
	}
	qbCheckEvents(t, "q7", events, query.Options{}, want)
}

func TestQ7Pebble(t *testing.T) { qbPebble(t, "q7", q7Want) }
