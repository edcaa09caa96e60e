package query

import (
	"encoding/binary"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// q17, auction statistics report: per auction and day, the bids (in all
// and per price level) and the minimum, maximum, average and sum of their
// prices.
//
//	SELECT
//	     auction,
//	     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	     count(*) AS total_bids,
//	     count(*) filter (where price < 10000) AS rank1_bids,
//	     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	     count(*) filter (where price >= 1000000) AS rank3_bids,
//	     min(price) AS min_price,
//	     max(price) AS max_price,
//	     avg(price) AS avg_price,
//	     sum(price) AS sum_price
//	FROM bid
//	GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// The bids, reduced to their auction, price and time, are keyed by auction
// and day number and aggregated by a qeDailyAgg (updates per bid, a
// group's state dropped at the end of its day; see its deviations from
// Flink) whose accumulator, in a ValueState, is the four counts, the
// minimum, maximum and sum. AVG of a BIGINT is a BIGINT in Flink: the sum
// divided by the count as Java's long division (truncated toward zero),
// computed in the result row.
func init() {
	register(Query{
		Name: "q17",
		Columns: []string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"min_price", "max_price", "avg_price", "sum_price"},
		Build: func(in *Input) error {
			keyed := weir.KeyByWithCodec(qeBids(in), func(b qeBid) q17Key { return q17Key{b.Auction, qeDay(b.DateTime)} }, q17KeyCodec{})
			changes := qeDailyAggregate(keyed, func(k q17Key) int64 { return k.Day },
				func() qeAggregator[qeBid, q17Acc] { return q17Agg{} })
			EmitChanges(in, changes.Name("q17 auction statistics"), func(r qeGroupRow[q17Key, q17Acc]) Row {
				a := &r.Acc
				return Row{r.Key.Auction, qeDayString(r.Key.Day), a.Bids[0], a.Bids[1], a.Bids[2], a.Bids[3],
					a.Min, a.Max, a.Sum / a.Bids[0], a.Sum}
			})
			return nil
		},
	})
}

// q17Key is q17's group: an auction and a day.
type q17Key struct {
	Auction, Day int64
}

// q17KeyCodec writes a q17Key as two zigzag varints: 6 bytes for the
// generator's auctions and days rather than the derived codec's 16, so
// that the heap state table holds the key in its slot (keys of up to 15
// bytes) instead of in a string of its own: another memory access and a
// byte comparison per lookup, and an allocation per group. The key's
// hash, which decides its subtask, does not depend on this codec.
type q17KeyCodec struct{}

func (q17KeyCodec) AppendEncode(dst []byte, k q17Key) []byte {
	dst = binary.AppendVarint(dst, k.Auction)
	return binary.AppendVarint(dst, k.Day)
}

func (q17KeyCodec) Decode(src []byte) (q17Key, int, error) {
	a, n := binary.Varint(src)
	if n <= 0 {
		return q17Key{}, 0, q17VarintErr(n)
	}
	d, m := binary.Varint(src[n:])
	if m <= 0 {
		return q17Key{}, 0, q17VarintErr(m)
	}
	return q17Key{Auction: a, Day: d}, n + m, nil
}

// q17VarintErr is the error of binary.Varint's result n <= 0.
func q17VarintErr(n int) error {
	if n == 0 {
		return codec.ErrTruncated
	}
	return codec.ErrCorrupt
}

// q17Acc is a group's counts (the total, then per price level) and the
// minimum, maximum and sum of its prices.
type q17Acc struct {
	Bids          [4]int64
	Min, Max, Sum int64
}

// q17Agg folds bids into q17's accumulators; it keeps no state of its own.
type q17Agg struct{}

func (q17Agg) open(state.KeyedStore) {}

func (q17Agg) read(qeBid) {}

func (q17Agg) add(a q17Acc, b qeBid) q17Acc {
	if a.Bids[0] == 0 {
		a.Min, a.Max = b.Price, b.Price
	} else {
		a.Min, a.Max = min(a.Min, b.Price), max(a.Max, b.Price)
	}
	a.Bids[0]++
	a.Bids[qeRank(b.Price)]++
	a.Sum += b.Price
	return a
}

func (q17Agg) clear() {}
