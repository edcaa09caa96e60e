package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q1, currency conversion: every bid with its price converted from dollars
// to euros.
//
//	SELECT auction, bidder, 0.908 * price as price, `dateTime`, extra FROM bid;
//
// One map chained to the source: bids become q1Bid with the price as the
// float64 nearest to the exact DECIMAL(23, 3) product (qaEuroPrice). Flink
// keeps the decimal exact; its JSON would print 1234.560 where Weir prints
// 1234.56, the same number.
func init() {
	register(Query{
		Name:    "q1",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra"},
		Build: func(in *Input) error {
			euros := weir.Map(Bids(in.Events), func(b nexmark.Bid) q1Bid {
				return q1Bid{Auction: b.Auction, Bidder: b.Bidder, Price: qaEuroPrice(b.Price), DateTime: b.DateTime, Extra: b.Extra}
			}).Name("q1 euros")
			Emit(in, euros, func(b q1Bid) Row { return Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra} })
			return nil
		},
	})
}

// q1Bid is a bid of q1's result.
type q1Bid struct {
	Auction, Bidder int64
	Price           float64
	DateTime        int64
	Extra           string
}
