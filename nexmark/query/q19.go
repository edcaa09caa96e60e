package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q19, the ten highest bids of each auction with their rank (Top-N):
//
//	SELECT * FROM
//	(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
//	WHERE rank_number <= 10;
//
// Flink runs this on an append-only input as AppendOnlyTopNFunction with
// the rank number in the output: per auction a buffer of the best rows by
// price; rows of equal price are kept in arrival order (a later row ranks
// below an earlier one of the same price, and one equal to the 10th when
// the buffer is full does not enter). A row entering at rank r updates
// every row from r down: the row that was at rank i is retracted
// (UPDATE_BEFORE) and the one now at rank i inserted (UPDATE_AFTER), and
// the row pushed out of rank 10 is retracted and dropped for good.
//
// Here: the bids keyed by auction, a keyed process function with one
// ValueState holding the auction's top ten bids in rank order (a new slice
// on every change: a stored value must not be changed in place), and the
// same changes into EmitChanges: for each rank from the new bid's down,
// Retract(old row, rank) then Insert(new row, rank). A bid that does not
// enter touches nothing but the read. The state lives as long as the
// auction may get bids, forever, as Flink keeps it (no TTL).
//
// Ties on price: by dateTime, earlier first, then by arrival (a later
// arrival below an earlier one of the same price and dateTime). On an
// input in dateTime order, as one source split delivers it, this is
// Flink's arrival order exactly; at parallelism > 1 the bids of one auction
// come from several splits in an order that only timing decides, and there
// Flink's ranks of equal prices depend on that timing while these follow
// dateTime (deterministic).
func init() {
	register(Query{
		Name:    "q19",
		Columns: append(append([]string(nil), qdBidColumns...), "rank_number"),
		Build: func(in *Input) error {
			keyed := weir.KeyBy(Bids(in.Events).WithCodec(qdBidCodec{}), func(b nexmark.Bid) int64 { return b.Auction })
			changes := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[int64, nexmark.Bid, Change[q19Ranked]](&q19TopN{})).
				Name("q19 top 10 bids per auction")
			EmitChanges(in, changes, func(r q19Ranked) Row { return append(qdBidRow(&r.Bid, 1), r.Rank) })
			return nil
		},
	})
}

// q19N is the N of the Top-N.
const q19N = 10

// q19Ranked is a row of q19's result: a bid and its rank (1 to 10).
type q19Ranked struct {
	Bid  nexmark.Bid
	Rank int64
}

// q19TopN keeps an auction's best bids, best first.
type q19TopN struct {
	top state.ValueState[[]nexmark.Bid]
}

func (f *q19TopN) Open(ctx weir.KeyedRuntimeContext) error {
	f.top = state.GetValueState(ctx.State(), state.ValueDescriptor[[]nexmark.Bid]{Name: "q19-top-bids", Codec: codec.Slice[nexmark.Bid](qdBidCodec{})})
	return nil
}

// q19Before says whether bid a ranks before b.
func q19Before(a, b *nexmark.Bid) bool {
	return a.Price > b.Price || a.Price == b.Price && a.DateTime < b.DateTime
}

func (f *q19TopN) ProcessElement(_ weir.KeyedContext[int64], b nexmark.Bid, out weir.Collector[Change[q19Ranked]]) error {
	top, _ := f.top.Value()
	pos := len(top)
	for i := range top {
		if q19Before(&b, &top[i]) {
			pos = i
			break
		}
	}
	if pos >= q19N {
		return nil
	}
	n := min(len(top)+1, q19N)
	next := make([]nexmark.Bid, n)
	copy(next, top[:pos])
	next[pos] = b
	copy(next[pos+1:], top[pos:n-1])
	for i := pos; i < n; i++ {
		if i < len(top) {
			out.Collect(Change[q19Ranked]{Retract: true, Value: q19Ranked{Bid: top[i], Rank: int64(i + 1)}})
		}
		out.Collect(Change[q19Ranked]{Value: q19Ranked{Bid: next[i], Rank: int64(i + 1)}})
	}
	f.top.Update(next)
	return nil
}
