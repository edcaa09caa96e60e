package query_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ14 runs over two streams of one event a second (instead of
// testConfig's 100) from 05:30 and from 17:30 UTC, 3 h 20 min each in
// short mode, so the CASE's hours 6, 7, 8 and 18, 19, 20 all occur.
func TestQ14(t *testing.T) {
	for _, base := range []string{"2026-01-02T05:30:00Z", "2026-01-02T17:30:00Z"} {
		t.Run(base[11:16], func(t *testing.T) {
			cfg := testConfig(t)
			cfg.EventsPerSecond = 1
			bt, err := time.Parse(time.RFC3339, base)
			if err != nil {
				t.Fatal(err)
			}
			cfg.BaseTime = bt.UnixMilli()
			lo, hi := big.NewRat(1_000_000, 1), big.NewRat(50_000_000, 1)
			types := map[string]int{}
			var want []query.Row
			for _, e := range testEvents(t, cfg) {
				if e.Type != nexmark.BidEvent {
					continue
				}
				b := e.Bid
				euros := new(big.Rat).Mul(big.NewRat(908, 1000), new(big.Rat).SetInt64(b.Price))
				if euros.Cmp(lo) <= 0 || euros.Cmp(hi) >= 0 {
					continue
				}
				price, _ := euros.Float64()
				var typ string
				switch h := time.UnixMilli(b.DateTime).UTC().Hour(); {
				case h >= 8 && h <= 18:
					typ = "dayTime"
				case h <= 6 || h >= 20:
					typ = "nightTime"
				default:
					typ = "otherTime"
				}
				types[typ]++
				var cs int64
				for i := 0; i < len(b.Extra); i++ {
					if b.Extra[i] == 'c' {
						cs++
					}
				}
				want = append(want, query.Row{b.Auction, b.Bidder, price, typ, b.DateTime, b.Extra, cs})
			}
			if len(types) != 3 {
				t.Fatalf("bid time types %v: the test needs all three", types)
			}
			checkQuery(t, "q14", cfg, want)
		})
	}
}
