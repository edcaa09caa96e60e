package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// q5Want counts the bids per auction in every hopping window (starts every
// 2 s, 10 s long) a bid falls in, then keeps per window the auctions with
// the largest count.
func q5Want(events []nexmark.Event) []query.Row {
	type key struct{ start, auction int64 }
	counts := map[key]int64{}
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		ts := e.Bid.DateTime
		for s := floorTo(ts, 2_000); s > ts-10_000; s -= 2_000 {
			counts[key{s, e.Bid.Auction}]++
		}
	}
	maxOf := map[int64]int64{}
	for k, n := range counts {
		maxOf[k.start] = max(maxOf[k.start], n)
	}
	var want []query.Row
	for k, n := range counts {
		if n >= maxOf[k.start] {
			want = append(want, query.Row{k.auction, n})
		}
	}
	return want
}

func TestQ5(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q5", cfg, q5Want(testEvents(t, cfg)))
}

// TestQ5Edges: ties (both auctions are emitted), window boundaries (a bid
// at a window's end is in the next window only) and a gap of empty windows.
func TestQ5Edges(t *testing.T) {
	events := []nexmark.Event{
		qbBid(1, 5, 100, qbT0),
		qbBid(2, 5, 100, qbT0+1_999),
		qbBid(1, 5, 100, qbT0+2_000),
		qbBid(2, 5, 100, qbT0+9_999),
		qbBid(3, 5, 100, qbT0+10_000),
		qbBid(3, 5, 100, qbT0+10_001),
		qbBid(4, 5, 100, qbT0+60_000),
	}
	want := q5Want(events)
	ties := 0
	for _, r := range want {
		if r[1] == int64(2) {
			ties++
		}
	}
	if ties < 3 {
		t.Fatalf("the reference has %d rows of count 2, want ties: %v", ties, want)
	}
	qbCheckEvents(t, "q5", events, query.Options{}, want)
}

func TestQ5Pebble(t *testing.T) { qbPebble(t, "q5", q5Want) }
