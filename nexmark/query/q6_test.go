package query_test

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ6 checks q6 against its meaning (q6.go) computed over the whole
// input: every auction's winning bid (highest price, then earliest), every
// auction closing by the end; per seller the winners in the order of
// (auction expiry, bid dateTime, auction id), and for each the average of
// its price and the up to 10 prices before it, truncated.
func TestQ6(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q6", cfg, q6Reference(testEvents(t, cfg)))
}

// TestQ6DefaultRate runs q6 at Nexmark's rate, where many auctions of the
// hot seller expire in the same millisecond.
func TestQ6DefaultRate(t *testing.T) {
	cfg := testConfig(t)
	cfg.EventsPerSecond = nexmark.DefaultConfig().EventsPerSecond
	checkQuery(t, "q6", cfg, q6Reference(testEvents(t, cfg)))
}

// TestQ6Pebble runs q6 on the Pebble state backend.
func TestQ6Pebble(t *testing.T) {
	cfg := testConfig(t)
	checkQueryWith(t, "q6", query.Options{Config: cfg, Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}, q6Reference(testEvents(t, cfg)))
}

func q6Reference(events []nexmark.Event) []query.Row {
	auctions := map[int64]nexmark.Auction{}
	for _, e := range events {
		if e.Type == nexmark.AuctionEvent {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	win := map[int64]nexmark.Bid{}
	for _, e := range events {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		a, ok := auctions[b.Auction]
		if !ok || b.DateTime < a.DateTime || b.DateTime > a.Expires {
			continue
		}
		if cur, seen := win[a.ID]; !seen || b.Price > cur.Price || b.Price == cur.Price && b.DateTime < cur.DateTime {
			win[a.ID] = b
		}
	}
	type closed struct{ expires, bidTime, auction, price int64 }
	bySeller := map[int64][]closed{}
	for id, b := range win {
		a := auctions[id]
		bySeller[a.Seller] = append(bySeller[a.Seller], closed{a.Expires, b.DateTime, id, b.Price})
	}
	var want []query.Row
	for seller, cs := range bySeller {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].expires != cs[j].expires {
				return cs[i].expires < cs[j].expires
			}
			if cs[i].bidTime != cs[j].bidTime {
				return cs[i].bidTime < cs[j].bidTime
			}
			return cs[i].auction < cs[j].auction
		})
		for i := range cs {
			var sum, n int64
			for j := max(0, i-10); j <= i; j++ {
				sum += cs[j].price
				n++
			}
			want = append(want, query.Row{strconv.FormatInt(seller, 10), sum / n})
		}
	}
	return want
}

// TestQ6Checkpointed runs q6 taking checkpoints every 10 ms (its states
// snapshotted through their codecs), on the heap and the Pebble backends.
func TestQ6Checkpointed(t *testing.T) {
	cfg := testConfig(t)
	want := q6Reference(testEvents(t, cfg))
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			checkQueryWith(t, "q6", query.Options{Config: cfg, Parallelism: 2, StateBackend: backend, StateDir: t.TempDir(),
				CheckpointInterval: 10 * time.Millisecond, CheckpointDir: dir}, want)
			if n := qcCountFiles(t, dir); n == 0 {
				t.Error("no checkpoint was written")
			}
		})
	}
}
