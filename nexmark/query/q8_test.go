package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// TestQ8 joins the distinct (id, name, window) of people with the distinct
// (seller, window) of auctions. (A new person sells in the window of their
// registration only when one of its non-hot auctions picks them among
// ~1,000 recent people: testConfig's short stream gives some 30 rows.)
func TestQ8(t *testing.T) {
	cfg := testConfig(t)
	type person struct {
		id    int64
		name  string
		start int64
	}
	type sale struct{ seller, start int64 }
	people := map[person]bool{}
	sales := map[sale]bool{}
	for _, e := range testEvents(t, cfg) {
		switch e.Type {
		case nexmark.PersonEvent:
			people[person{e.Person.ID, e.Person.Name, floorTo(e.Person.DateTime, 10_000)}] = true
		case nexmark.AuctionEvent:
			sales[sale{e.Auction.Seller, floorTo(e.Auction.DateTime, 10_000)}] = true
		}
	}
	var want []query.Row
	for p := range people {
		if sales[sale{p.id, p.start}] {
			want = append(want, query.Row{p.id, p.name, p.start})
		}
	}
	t.Logf("%d rows", len(want))
	checkQuery(t, "q8", cfg, want)
}
