package query_test

import (
	"slices"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// q11Want sweeps over each bidder's bid times in order: a bid at most 10 s
// after the session's last bid (at its end, last + 10 s, included: Flink
// merges windows that touch) extends the session.
func q11Want(events []nexmark.Event) []query.Row {
	times := map[int64][]int64{}
	for _, e := range events {
		if e.Type == nexmark.BidEvent {
			times[e.Bid.Bidder] = append(times[e.Bid.Bidder], e.Bid.DateTime)
		}
	}
	const gap = 10_000
	var want []query.Row
	for bidder, ts := range times {
		slices.Sort(ts)
		start, end, n := ts[0], ts[0]+gap, int64(1)
		for _, x := range ts[1:] {
			if x <= end {
				end = max(end, x+gap)
				n++
				continue
			}
			want = append(want, query.Row{bidder, n, start, end})
			start, end, n = x, x+gap, 1
		}
		want = append(want, query.Row{bidder, n, start, end})
	}
	return want
}

func TestQ11(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q11", cfg, q11Want(testEvents(t, cfg)))
}

// TestQ11Edges: bids exactly 10 s apart are one session (the windows
// touch), 10 s + 1 ms apart two; a bid out of order merges two sessions.
func TestQ11Edges(t *testing.T) {
	events := []nexmark.Event{
		qbBid(1, 7, 100, qbT0),
		qbBid(1, 7, 100, qbT0+10_000), // touches: same session
		qbBid(1, 7, 100, qbT0+20_001), // a new session
		qbBid(1, 8, 100, qbT0+1_000),
		qbBid(1, 8, 100, qbT0+16_000), // a second session of 8 ...
		qbBid(1, 8, 100, qbT0+9_000),  // ... until this one bridges them
		qbBid(1, 9, 100, qbT0+40_000), // moves the watermark on
	}
	want := q11Want(events)
	if len(want) != 4 {
		t.Fatalf("the reference gives %d sessions, want 4: %v", len(want), want)
	}
	qbCheckEvents(t, "q11", events, query.Options{}, want)
}

func TestQ11Pebble(t *testing.T) { qbPebble(t, "q11", q11Want) }
