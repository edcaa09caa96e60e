package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/state"
)

// q15, bidding statistics report: per day, the bids, distinct bidders and
// distinct auctions, in all and per price level.
//
//	SELECT
//	     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	     count(*) AS total_bids,
//	     count(*) filter (where price < 10000) AS rank1_bids,
//	     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	     count(*) filter (where price >= 1000000) AS rank3_bids,
//	     count(distinct bidder) AS total_bidders,
//	     count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//	     count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//	     count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//	     count(distinct auction) AS total_auctions,
//	     count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//	     count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//	     count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//	FROM bid
//	GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// The bids, reduced to their auction, bidder, price and time, are keyed by
// their day (a day number; the 'yyyy-MM-dd' string is made only for result
// rows) and aggregated by a qeDailyAgg: the twelve counts in a ValueState,
// the distinct bidders and auctions in a MapState of bit sets of the price
// levels each was seen at (qeDistinct). Its results are a changelog
// (EmitChanges): each bid retracts its day's row and inserts the updated
// one, as Flink's group aggregation does, and the day's state is dropped
// when the watermark passes its end. The deviation from Flink (see
// qeDailyAgg): bids later than the watermark allows after their day's end
// are dropped, where Flink would update the day's row (keeping all state
// forever).
func init() {
	register(Query{
		Name: "q15",
		Columns: []string{"day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
			"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
		Build: func(in *Input) error {
			byDay := weir.KeyBy(qeBids(in), func(b qeBid) int64 { return qeDay(b.DateTime) })
			changes := qeDailyAggregate(byDay, func(day int64) int64 { return day },
				func() qeAggregator[qeBid, qeRankCounts] { return new(q15Agg) })
			EmitChanges(in, changes.Name("q15 daily counts"), func(r qeGroupRow[int64, qeRankCounts]) Row {
				return r.Acc.values(append(make(Row, 0, 13), qeDayString(r.Key)))
			})
			return nil
		},
	})
}

// q15Agg counts bids into q15's counts.
type q15Agg struct{ distinct qeDistinct }

func (a *q15Agg) open(st state.KeyedStore) { a.distinct.open(st) }

func (a *q15Agg) read(b qeBid) { a.distinct.read(&b) }

func (a *q15Agg) add(c qeRankCounts, b qeBid) qeRankCounts {
	a.distinct.add(&c, &b)
	return c
}

func (a *q15Agg) clear() { a.distinct.clear() }
