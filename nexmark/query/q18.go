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
// Here: the bids keyed by (bidder, auction), a keyed process function
// with the last bid in a ValueState of its encoding in place (qdRec: a
// table without pointers, so no allocation per update and nothing for the
// garbage collector to mark per key; a bid too long for the record keeps
// its encoding in a second ValueState of string), the same replacement
// rule, and Retract(old) + Insert(new) into EmitChanges. The changes carry
// the bids encoded (qdRecBid); they are decoded only into result rows. The
// state is never cleaned up, as in Flink (which keeps it without a TTL):
// any later bid of the pair can still replace it.
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
			bids := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[qdRecBid]) {
				if e.Type == nexmark.BidEvent {
					var r qdRecBid
					r.set(&e.Bid)
					out.Collect(r)
				}
			}).Name("bids").WithCodec(qdRecBidCodec{})
			keyed := weir.KeyByWithCodec(bids, func(b qdRecBid) q18Key { return q18Key{Bidder: b.Rec.num(8), Auction: b.Rec.num(0)} }, q18KeyCodec{})
			changes := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[q18Key, qdRecBid, Change[qdRecBid]](&q18LastBid{})).
				Name("q18 last bid per bidder and auction")
			EmitChanges(in, changes, func(r qdRecBid) Row { b := r.bid(); return qdBidRow(&b, 0) })
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

// q18LastBid keeps the last bid of its key as a qdRec, and the encoding
// of a bid too long for one in long.
type q18LastBid struct {
	last state.ValueState[qdRec]
	long state.ValueState[string]
}

func (d *q18LastBid) Open(ctx weir.KeyedRuntimeContext) error {
	d.last = state.GetValueState(ctx.State(), state.ValueDescriptor[qdRec]{Name: "q18-last-bid-record", Codec: qdRecCodec{}})
	d.long = state.GetValueState(ctx.State(), state.ValueDescriptor[string]{Name: "q18-last-bid-long", Codec: codec.String()})
	return nil
}

func (d *q18LastBid) ProcessElement(_ weir.KeyedContext[q18Key], b qdRecBid, out weir.Collector[Change[qdRecBid]]) error {
	prev, ok := d.last.Value()
	if ok {
		if b.Rec.num(24) < prev.num(24) {
			return nil // an older bid arriving late: the kept one stays last
		}
		old := Change[qdRecBid]{Retract: true, Value: qdRecBid{Rec: prev}}
		if prev.long() {
			if old.Value.Long, _ = d.long.Value(); len(old.Value.Long) < 32 {
				return fmt.Errorf("q18: a long last bid in state of %d bytes", len(old.Value.Long))
			}
			if !b.Rec.long() {
				d.long.Clear()
			}
		}
		out.Collect(old)
	}
	d.last.Update(b.Rec)
	if b.Rec.long() {
		d.long.Update(b.Long)
	}
	out.Collect(Change[qdRecBid]{Value: b})
	return nil
}
