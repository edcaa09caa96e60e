package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q9, winning bids: each auction with its highest bid (the earliest of
// equal highest bids).
//
//	SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
//	    auction, bidder, price, bid_dateTime, bid_extra
//	FROM (
//	   SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
//	     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
//	   FROM auction A, bid B
//	   WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//	)
//	WHERE rownum <= 1;
//
// An updating result (EmitChanges): Flink's Top-1 retracts an auction's
// row and inserts the new one whenever a joined bid ranks first. The Top-N
// is partitioned by the join key, so here it runs inside the join operator
// (qcJoin, qc.go, keyed by the auction id): the per-auction accumulator is
// the current top bid (what the row needs of it: bidder, price, dateTime,
// extra); a bid that ranks above it (higher price, or equal price and
// earlier dateTime) retracts the old row and inserts the new one. The
// auction itself (state "qc-auction") is read only then. Both end at the
// auction's expiry (event-time timer), after which no bid can join it, so
// the top bid is final; Flink's Rank keeps it forever. Bids equal in price
// and dateTime keep the first that came, as Flink's ROW_NUMBER does (the
// row then depends on the arrival order, as in Flink). Timestamps are
// epoch ms. Deviation from Flink: only late data (qc.go).
func init() {
	register(Query{
		Name: "q9",
		Columns: []string{"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category", "extra",
			"auction", "bidder", "price", "bid_dateTime", "bid_extra"},
		Build: func(in *Input) error {
			bids := weir.Map(Bids(in.Events), func(b nexmark.Bid) q9Bid {
				return q9Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra}
			}).Name("q9 bids")
			tops, err := qcJoin(Auctions(in.Events), bids, qcJoinSpec[nexmark.Auction, q9Bid, q9Bid, Change[q9Top]]{
				Name:        "q9 join and top bid per auction",
				AuctionID:   func(a nexmark.Auction) int64 { return a.ID },
				AuctionSpan: func(a nexmark.Auction) (int64, int64) { return a.DateTime, a.Expires },
				BidAuction:  func(b q9Bid) int64 { return b.Auction },
				BidTime:     func(b q9Bid) int64 { return b.DateTime },
				Fold: func(top q9Bid, has bool, b q9Bid) (q9Bid, bool) {
					if has && (b.Price < top.Price || b.Price == top.Price && b.DateTime >= top.DateTime) {
						return top, false
					}
					return b, true
				},
				Changed: func(a nexmark.Auction, old q9Bid, had bool, top q9Bid, out weir.Collector[Change[q9Top]]) {
					if had {
						out.Collect(Retract(q9Top{Auction: a, Bid: old}))
					}
					out.Collect(Insert(q9Top{Auction: a, Bid: top}))
				},
			})
			if err != nil {
				return err
			}
			EmitChanges(in, tops, func(t q9Top) Row {
				a, b := &t.Auction, &t.Bid
				return Row{a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra,
					b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra}
			})
			return nil
		},
	})
}

// q9Bid is what q9 keeps of a bid (not its channel and URL).
type q9Bid struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
}

// q9Top is a row of q9's result: an auction and its top bid.
type q9Top struct {
	Auction nexmark.Auction
	Bid     q9Bid
}
