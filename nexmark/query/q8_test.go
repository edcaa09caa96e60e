package query_test

import (
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// q8Want joins the distinct (id, name, window) of people with the distinct
// (seller, window) of auctions. (A new person sells in the window of their
// registration only when one of its non-hot auctions picks them among
// ~1,000 recent people: testConfig's short stream gives some 30 rows.)
func q8Want(events []nexmark.Event) []query.Row {
	type person struct {
		id    int64
		name  string
		start int64
	}
	type sale struct{ seller, start int64 }
	people := map[person]bool{}
	sales := map[sale]bool{}
	for _, e := range events {
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
	return want
}

func TestQ8(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q8", cfg, q8Want(testEvents(t, cfg)))
}

// TestQ8Edges: several auctions of one seller in the window give one row;
// an auction in the next window, or before the person in another window,
// gives none; one before the person in the same window counts.
func TestQ8Edges(t *testing.T) {
	person := func(id int64, name string, ts int64) nexmark.Event {
		return nexmark.Event{Type: nexmark.PersonEvent, Person: nexmark.Person{ID: id, Name: name, EmailAddress: "a@b.com",
			CreditCard: "1234 5678 9012 3456", City: "Phoenix", State: "AZ", DateTime: ts, Extra: "x"}}
	}
	auction := func(id, seller, ts int64) nexmark.Event {
		return nexmark.Event{Type: nexmark.AuctionEvent, Auction: nexmark.Auction{ID: id, ItemName: "i", Description: "d",
			InitialBid: 1, Reserve: 2, DateTime: ts, Expires: ts + 1, Seller: seller, Category: 10, Extra: "x"}}
	}
	events := []nexmark.Event{
		auction(1, 2, qbT0+500), // before person 2, same window
		person(1, "Ann", qbT0+1_000),
		person(2, "Bob", qbT0+2_000),
		auction(2, 1, qbT0+3_000),
		auction(3, 1, qbT0+4_000),
		person(3, "Cy", qbT0+9_999),
		auction(4, 3, qbT0+10_000), // the next window
		auction(5, 4, qbT0+11_000), // before person 4, in another window
		person(4, "Di", qbT0+20_000),
		qbBid(1, 1, 1, qbT0+60_000),
	}
	want := q8Want(events)
	if len(want) != 2 {
		t.Fatalf("the reference gives %d rows, want 2: %v", len(want), want)
	}
	qbCheckEvents(t, "q8", events, query.Options{}, want)
}

func TestQ8Pebble(t *testing.T) { qbPebble(t, "q8", q8Want) }
