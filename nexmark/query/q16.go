package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q16, channel statistics report: q15's statistics per channel and day,
// with the day's last minute of bids on the channel.
//
//	SELECT
//	    channel,
//	    DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	    max(DATE_FORMAT(`dateTime`, 'HH:mm')) as `minute`,
//	    count(*) AS total_bids,
//	    count(*) filter (where price < 10000) AS rank1_bids,
//	    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	    count(*) filter (where price >= 1000000) AS rank3_bids,
//	    count(distinct bidder) AS total_bidders,
//	    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//	    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//	    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//	    count(distinct auction) AS total_auctions,
//	    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//	    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//	    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//	FROM bid
//	GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// As q15 (a qeDailyAgg with the counts in a ValueState and the distinct
// bidders and auctions in a MapState, updates per bid, a group's state
// dropped at the end of its day), keyed by channel and day number. Within
// a day 'HH:mm' strings order as times do, so max(DATE_FORMAT(dateTime,
// 'HH:mm')) is the minute of the group's latest bid: the accumulator keeps
// that time, formatted only in result rows. Deviations from Flink: those
// of q15.
func init() {
	register(Query{
		Name: "q16",
		Columns: []string{"channel", "day", "minute", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
			"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
		Build: func(in *Input) error {
			bids := weir.Map(Bids(in.Events), func(b nexmark.Bid) q16Bid {
				return q16Bid{Channel: b.Channel, Bid: qeBid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime}}
			}).Name("bid fields")
			keyed := weir.KeyBy(bids, func(b q16Bid) q16Key { return q16Key{b.Channel, qeDay(b.Bid.DateTime)} })
			changes := qeDailyAggregate(keyed, func(k q16Key) int64 { return k.Day },
				func() qeAggregator[q16Bid, q16Acc] { return new(q16Agg) })
			EmitChanges(in, changes.Name("q16 channel counts"), func(r qeGroupRow[q16Key, q16Acc]) Row {
				row := append(make(Row, 0, 15), r.Key.Channel, qeDayString(r.Key.Day), qeMinuteString(r.Acc.Latest))
				return r.Acc.Counts.values(row)
			})
			return nil
		},
	})
}

// q16Bid is the part of a bid q16 reads.
type q16Bid struct {
	Channel string
	Bid     qeBid
}

// q16Key is q16's group: a channel and a day.
type q16Key struct {
	Channel string
	Day     int64
}

// q16Acc is a group's counts and the time of its latest bid.
type q16Acc struct {
	Counts qeRankCounts
	Latest int64
}

// q16Agg counts bids into q16's accumulators.
type q16Agg struct{ distinct qeDistinct }

func (a *q16Agg) open(st state.KeyedStore) { a.distinct.open(st) }

func (a *q16Agg) add(acc q16Acc, b q16Bid) q16Acc {
	if acc.Counts.Bids[0] == 0 || b.Bid.DateTime > acc.Latest {
		acc.Latest = b.Bid.DateTime
	}
	a.distinct.add(&acc.Counts, &b.Bid)
	return acc
}

func (a *q16Agg) clear() { a.distinct.clear() }
