package query

import (
	"encoding/binary"
	"fmt"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
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
// one ValueState holding the last bid (as the string it crossed the
// exchange as, qdEncBid), the same replacement rule, and
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
			keyed := weir.KeyByWithCodec(qdEncBids(in.Events), func(b qdEncBid) q18Key { return q18Key{Bidder: b.Bid.Bidder, Auction: b.Bid.Auction} }, q18KeyCodec{})
			changes := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[q18Key, qdEncBid, Change[nexmark.Bid]](&q18LastBid{})).
				Name("q18 last bid per bidder and auction")
			EmitChanges(in, changes, func(b nexmark.Bid) Row { return qdBidRow(&b, 0) })
			return nil
		},
	})
}

// q18Key is the partition of q18's ROW_NUMBER.
type q18Key struct{ Bidder, Auction int64 }

// q18KeyCodec writes a q18Key as two zigzag varints: 6 bytes for
// Nexmark's ids rather than the derived codec's 16, so that the heap
// state table holds the key in its slot (keys of up to 15 bytes) instead
// of in a string of its own (an allocation per key, and another memory
// access per lookup).
type q18KeyCodec struct{}

func (q18KeyCodec) AppendEncode(dst []byte, k q18Key) []byte {
	dst = binary.AppendVarint(dst, k.Bidder)
	return binary.AppendVarint(dst, k.Auction)
}

func (q18KeyCodec) Decode(src []byte) (q18Key, int, error) {
	b, n := binary.Varint(src)
	if n <= 0 {
		return q18Key{}, 0, q18VarintErr(n)
	}
	a, m := binary.Varint(src[n:])
	if m <= 0 {
		return q18Key{}, 0, q18VarintErr(m)
	}
	return q18Key{Bidder: b, Auction: a}, n + m, nil
}

// q18VarintErr is the error of binary.Varint's result n <= 0.
func q18VarintErr(n int) error {
	if n == 0 {
		return codec.ErrTruncated
	}
	return codec.ErrCorrupt
}

// q18LastBid keeps the last bid of its key, as its qdBidCodec encoding
// (the string the bid crossed the exchange as, qdEncBid.Enc): a state
// entry of 16 bytes rather than a bid of 80, which the heap table moves
// as it grows and the garbage collector traces.
type q18LastBid struct {
	last state.ValueState[string]
}

func (d *q18LastBid) Open(ctx weir.KeyedRuntimeContext) error {
	d.last = state.GetValueState(ctx.State(), state.ValueDescriptor[string]{Name: "q18-last-bid", Codec: codec.String()})
	return nil
}

func (d *q18LastBid) ProcessElement(_ weir.KeyedContext[q18Key], b qdEncBid, out weir.Collector[Change[nexmark.Bid]]) error {
	if prev, ok := d.last.Value(); ok {
		if len(prev) < 32 {
			return fmt.Errorf("q18: a last bid in state of %d bytes", len(prev))
		}
		if b.Bid.DateTime < qdNum(prev, 24) {
			return nil // an older bid arriving late: the kept one stays last
		}
		p, err := qdParseBid(prev)
		if err != nil {
			return fmt.Errorf("q18: a last bid in state: %w", err)
		}
		out.Collect(Change[nexmark.Bid]{Retract: true, Value: p})
	}
	d.last.Update(b.enc())
	out.Collect(Change[nexmark.Bid]{Value: b.Bid})
	return nil
}
