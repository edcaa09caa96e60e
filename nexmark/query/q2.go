package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q2, selection: the bids on every 123rd auction, with their price.
//
//	SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
//
// One flat map chained to the source keeps the bids whose auction is a
// multiple of 123 (Go's % keeps the dividend's sign as Java's MOD does, so
// the test against 0 is the same for negative ids) and projects them.
func init() {
	register(Query{
		Name:    "q2",
		Columns: []string{"auction", "price"},
		Build: func(in *Input) error {
			selected := weir.FlatMap(Bids(in.Events), func(b nexmark.Bid, out weir.Collector[q2Bid]) {
				if b.Auction%123 == 0 {
					out.Collect(q2Bid{Auction: b.Auction, Price: b.Price})
				}
			}).Name("q2 selection")
			Emit(in, selected, func(b q2Bid) Row { return Row{b.Auction, b.Price} })
			return nil
		},
	})
}

// q2Bid is a row of q2's result.
type q2Bid struct{ Auction, Price int64 }
