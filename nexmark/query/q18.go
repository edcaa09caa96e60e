package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q18, the last bid of each bidder on each auction (a deduplication):
//
//	SELECT auction, bidder, price, channel, url, dateTime, extra
//	 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
//	       FROM bid)
//	 WHERE rank_number <= 1;
//
// Flink plans this as a deduplication keeping the last row by rowtime
// (RowTimeDeduplicateFunction, keepLastRow): per (bidder, auction) it keeps
// the row it emitted last, and a new row replaces it when its dateTime is
// at least the kept one's (so with equal dateTime the later-arriving row
// wins; an older row arriving late is ignored), retracting the old row and
// inserting the new one. No watermark or late-data check is involved.
//
// Here: the bids keyed by (bidder, auction), a keyed process function with
// one ValueState holding the last bid, the same replacement rule, and
// Retract(old) + Insert(new) into EmitChanges. The state is never cleaned
// up, as in Flink (which keeps it without a TTL): any later bid of the pair
// can still replace it.
//
// Deviation: none in the final table. At parallelism > 1 bids of one pair
// from different source splits may arrive out of dateTime order; as in
// Flink the older one is then ignored, so the result is the bid with the
// largest dateTime (ties: the last to arrive, which only the order of
// arrival decides, as in Flink).
func init() {
	register(Query{
		Name:    "q18",
		Columns: qdBidColumns,
		Build: func(in *Input) error {
			keyed := weir.KeyBy(Bids(in.Events).WithCodec(qdBidCodec{}), func(b nexmark.Bid) q18Key { return q18Key{Bidder: b.Bidder, Auction: b.Auction} })
			changes := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[q18Key, nexmark.Bid, Change[nexmark.Bid]](&q18LastBid{})).
				Name("q18 last bid per bidder and auction")
			EmitChanges(in, changes, func(b nexmark.Bid) Row { return qdBidRow(&b, 0) })
			return nil
		},
	})
}

// q18Key is the partition of q18's ROW_NUMBER.
type q18Key struct{ Bidder, Auction int64 }

// q18LastBid keeps the last bid of its key.
type q18LastBid struct {
	last state.ValueState[nexmark.Bid]
}

func (d *q18LastBid) Open(ctx weir.KeyedRuntimeContext) error {
	d.last = state.GetValueState(ctx.State(), state.ValueDescriptor[nexmark.Bid]{Name: "q18-last-bid", Codec: qdBidCodec{}})
	return nil
}

func (d *q18LastBid) ProcessElement(_ weir.KeyedContext[q18Key], b nexmark.Bid, out weir.Collector[Change[nexmark.Bid]]) error {
	if prev, ok := d.last.Value(); ok {
		if b.DateTime < prev.DateTime {
			return nil // an older bid arriving late: the kept one stays last
		}
		out.Collect(Change[nexmark.Bid]{Retract: true, Value: prev})
	}
	d.last.Update(b)
	out.Collect(Change[nexmark.Bid]{Value: b})
	return nil
}
