package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q4, average price for a category: the average of the winning (highest)
// bid prices of the auctions in each category.
//
//	SELECT Q.category, AVG(Q.final)
//	FROM (
//	    SELECT MAX(B.price) AS final, A.category
//	    FROM auction A, bid B
//	    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//	    GROUP BY A.id, A.category
//	) Q
//	GROUP BY Q.category;
//
// An updating result (EmitChanges): in Flink both GROUP BYs are regular
// aggregations, so every new maximum of an auction retracts its old one
// from its category's average. Here the join and the inner MAX run in one
// operator keyed by the auction id (qcJoin, qc.go): it keeps the
// auction's span and its maximum (one int64) and, when a joined bid raises
// the maximum, sends its category (old maximum, new maximum); the auction's
// state ends at its expiry (event-time timer), when no later bid can join
// it. A second operator keyed by the category keeps the sum and count of
// the maxima (state "q4-sum") and emits the retraction of the old average
// and the new one when it changes (Flink emits nothing either when an
// aggregate's value is unchanged). AVG of a BIGINT is a BIGINT, sum / count
// truncated as Java's long division. Deviation from Flink: only late data
// (qc.go): bids or auctions behind the watermark that Flink's regular join
// would still join.
func init() {
	register(Query{
		Name:    "q4",
		Columns: []string{"id", "final"},
		Build: func(in *Input) error {
			auctions := weir.Map(Auctions(in.Events), func(a nexmark.Auction) q4Auction {
				return q4Auction{ID: a.ID, DateTime: a.DateTime, Expires: a.Expires, Category: a.Category}
			}).Name("q4 auctions")
			maxima, err := qcJoin(auctions, qcBidPrices(in.Events), qcJoinSpec[q4Auction, qcBidPrice, int64, q4Delta]{
				Name:        "q4 join and max per auction",
				AuctionID:   func(a q4Auction) int64 { return a.ID },
				AuctionSpan: func(a q4Auction) (int64, int64) { return a.DateTime, a.Expires },
				BidAuction:  func(b qcBidPrice) int64 { return b.Auction },
				BidTime:     func(b qcBidPrice) int64 { return b.DateTime },
				Fold: func(max int64, has bool, b qcBidPrice) (int64, bool) {
					if has && b.Price <= max {
						return max, false
					}
					return b.Price, true
				},
				Changed: func(a q4Auction, old int64, had bool, max int64, out weir.Collector[q4Delta]) {
					out.Collect(q4Delta{Category: a.Category, Old: old, New: max, HadOld: had})
				},
			})
			if err != nil {
				return err
			}
			byCategory := weir.KeyByWithCodec(maxima, func(d q4Delta) int64 { return d.Category }, codec.Int64())
			avgs := weir.ProcessKeyed(byCategory, weir.KeyedProcessFunction[int64, q4Delta, Change[q4Avg]](&q4Average{})).Name("q4 average per category")
			EmitChanges(in, avgs, func(a q4Avg) Row { return Row{a.Category, a.Avg} })
			return nil
		},
	})
}

// q4Auction is what q4 keeps of an auction.
type q4Auction struct {
	ID, DateTime, Expires, Category int64
}

// q4Delta is a change of an auction's maximum: from Old (if HadOld) to New.
type q4Delta struct {
	Category, Old, New int64
	HadOld             bool
}

// q4Avg is a row of q4's result.
type q4Avg struct {
	Category, Avg int64
}

// q4Sum is a category's sum and count of auction maxima.
type q4Sum struct {
	Sum, Count int64
}

// q4Average keeps each category's average of the auction maxima.
type q4Average struct {
	sum state.ValueState[q4Sum]
}

func (f *q4Average) Open(ctx weir.KeyedRuntimeContext) error {
	f.sum = state.GetValueState(ctx.State(), state.ValueDescriptor[q4Sum]{Name: "q4-sum", Codec: codec.MustFor[q4Sum]()})
	return nil
}

func (f *q4Average) ProcessElement(_ weir.KeyedContext[int64], d q4Delta, out weir.Collector[Change[q4Avg]]) error {
	s, ok := f.sum.Value()
	var oldAvg int64
	if ok {
		oldAvg = s.Sum / s.Count
	}
	if d.HadOld {
		s.Sum += d.New - d.Old
	} else {
		s.Sum += d.New
		s.Count++
	}
	f.sum.Update(s)
	newAvg := s.Sum / s.Count
	if ok {
		if newAvg == oldAvg {
			return nil
		}
		out.Collect(Retract(q4Avg{Category: d.Category, Avg: oldAvg}))
	}
	out.Collect(Insert(q4Avg{Category: d.Category, Avg: newAvg}))
	return nil
}
