package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q0, pass through: every bid, unchanged. It measures the cost of the
// source, the bids' filter and the sink, the floor under every query.
//
//	SELECT auction, bidder, price, dateTime, extra FROM bid;
func init() {
	register(Query{
		Name:    "q0",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra"},
		Build: func(in *Input) error {
			Emit(in, Bids(in.Events), func(b nexmark.Bid) Row {
				return Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra}
			})
			return nil
		},
	})
}

// Bids are the bids among events (Nexmark's bid view).
func Bids(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Bid] {
	return weir.FlatMap(events, func(e nexmark.Event, out weir.Collector[nexmark.Bid]) {
		if e.Type == nexmark.BidEvent {
			out.Collect(e.Bid)
		}
	}).Name("bids")
}

// Auctions are the auctions among events (Nexmark's auction view).
func Auctions(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Auction] {
	return weir.FlatMap(events, func(e nexmark.Event, out weir.Collector[nexmark.Auction]) {
		if e.Type == nexmark.AuctionEvent {
			out.Collect(e.Auction)
		}
	}).Name("auctions")
}

// People are the people among events (Nexmark's person view).
func People(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Person] {
	return weir.FlatMap(events, func(e nexmark.Event, out weir.Collector[nexmark.Person]) {
		if e.Type == nexmark.PersonEvent {
			out.Collect(e.Person)
		}
	}).Name("people")
}
