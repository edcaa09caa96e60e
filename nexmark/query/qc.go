package query

import (
	"fmt"
	"math"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// What q4, q6 and q9 share: Nexmark's join of each bid with its auction,
//
//	FROM auction A, bid B
//	WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//
// followed by a per-auction aggregate of the joined bids (q4: MAX(price);
// q6, q9: the top bid). In Flink SQL it is a regular join that keeps both
// sides forever, and the aggregate is a separate operator keyed by the
// auction again; here both run in one keyed two-input operator (qcJoin),
// keyed by the auction id, which never materializes the joined rows: each
// bid that joins its auction is folded into the auction's accumulator.
//
// State per auction id, through the state package (heap or Pebble):
//   - "qc-join", what every bid reads: the auction as the query keeps it
//     (projected before the exchange), its span, the accumulator of its
//     joined bids, and whether bids came before it. One value, so that a
//     bid costs one lookup and an auction one lookup and one insertion.
//   - "qc-early-bids": the bids that came before their auction (at
//     parallelism > 1 the two sides interleave arbitrarily, and Nexmark
//     bids on auctions up to 10 ahead, which at 10 M events/s start in the
//     same millisecond as those bids), until the auction comes. A list
//     state, whose heap backend appends in place: a slice in "qc-join"
//     would be copied on every append.
//
// Timers (event time) end the state:
//   - at A.expires the auction closes: no bid with a later dateTime can
//     join it, and a bid with dateTime <= A.expires that comes after the
//     watermark passed A.expires is late (more than the watermark's 4 s out
//     of order). The query's Closed hook runs (q6 emits the winner), then
//     the auction's state is cleared.
//   - at B.dateTime for an early bid: an auction that can join it has
//     A.dateTime <= B.dateTime, so it comes before the watermark passes
//     B.dateTime unless it is late; the bid is dropped then. (One timer
//     per key at a time: the first early bid's, which sets the next.)
//
// What that means against Flink's regular join, which keeps everything: a
// bid that comes after the watermark passed its auction's expiry, or an
// auction that comes after the watermark passed the dateTime of its bids,
// is not joined (Flink would join it). Nexmark's generator emits events in
// dateTime order (with its default out-of-order group size of 1) and the
// watermark is 4 s behind, so with the generator or its files no event is
// ever late and the results are Flink's. The gain: an auction's state lives
// from its start to 4 s (the watermark's delay) after its expiry, instead
// of forever.

// qcBidPrice is what q4 and q6 keep of a bid.
type qcBidPrice struct {
	Auction, Price, DateTime int64
}

// qcBidPrices projects the bids to what q4 and q6 need, before the
// exchange to the join (a Bid is 80 bytes and three strings on the wire).
func qcBidPrices(events weir.DataStream[nexmark.Event]) weir.DataStream[qcBidPrice] {
	return weir.Map(Bids(events), func(b nexmark.Bid) qcBidPrice {
		return qcBidPrice{Auction: b.Auction, Price: b.Price, DateTime: b.DateTime}
	}).Name("bid prices")
}

// qcJoinSpec says what one query does with the auction-bid join: A is
// what it keeps of an auction, B of a bid, S the per-auction accumulator
// of the joined bids, U what the join emits.
type qcJoinSpec[A, B, S, U any] struct {
	// Name names the operator.
	Name string
	// AuctionID, AuctionSpan (A.dateTime, A.expires), BidAuction and
	// BidTime read the join's columns.
	// (Values, not pointers: a pointer passed to a function value
	// escapes, which would cost an allocation per record.)
	AuctionID   func(a A) int64
	AuctionSpan func(a A) (start, expires int64)
	BidAuction  func(b B) int64
	BidTime     func(b B) int64
	// Fold folds a bid that joins the auction into acc (has: acc holds
	// an earlier bid already): the new accumulator, and whether it
	// changed.
	Fold func(acc S, has bool, b B) (S, bool)
	// Changed, if set, runs after Fold changed the accumulator: old is
	// the accumulator before (meaningful when had).
	Changed func(a A, old S, had bool, acc S, out weir.Collector[U])
	// Closed, if set, runs when the auction closes (the watermark passed
	// its expiry), with its final accumulator (has: some bid joined).
	Closed func(a A, acc S, has bool, out weir.Collector[U])
}

// qcJoinRec is what the join keeps per auction id and every bid reads.
type qcJoinRec[A, S any] struct {
	// Opened: the auction has come; Auction is it, Start and Expires its
	// span, Acc the accumulator of its joined bids (Has: some bid joined).
	Opened         bool
	Auction        A
	Start, Expires int64
	Has            bool
	Acc            S
	// Early: bids came before the auction (state "qc-early-bids").
	Early bool
}

// qcJoin joins bids to their auctions as the spec says (see above).
func qcJoin[A, B, S, U any](auctions weir.DataStream[A], bids weir.DataStream[B], spec qcJoinSpec[A, B, S, U]) (weir.DataStream[U], error) {
	cRec, err := codec.For[qcJoinRec[A, S]]()
	if err != nil {
		return weir.DataStream[U]{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cB, err := codec.For[B]()
	if err != nil {
		return weir.DataStream[U]{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	ka := weir.KeyByWithCodec(auctions, spec.AuctionID, codec.Int64())
	kb := weir.KeyByWithCodec(bids, spec.BidAuction, codec.Int64())
	fn := &qcJoinFn[A, B, S, U]{spec: spec, cRec: cRec, cB: cB}
	return weir.KeyedCoProcess(weir.ConnectKeyed(ka, kb), weir.KeyedCoProcessFunction[int64, A, B, U](fn)).Name(spec.Name), nil
}

type qcJoinFn[A, B, S, U any] struct {
	spec  qcJoinSpec[A, B, S, U]
	cRec  codec.Codec[qcJoinRec[A, S]]
	cB    codec.Codec[B]
	rec   state.ValueState[qcJoinRec[A, S]]
	early state.ListState[B]
}

func (f *qcJoinFn[A, B, S, U]) Open(ctx weir.KeyedRuntimeContext) error {
	f.rec = state.GetValueState(ctx.State(), state.ValueDescriptor[qcJoinRec[A, S]]{Name: "qc-join", Codec: f.cRec})
	f.early = state.GetListState(ctx.State(), state.ListDescriptor[B]{Name: "qc-early-bids", Codec: f.cB})
	return nil
}

// ProcessElement1 takes an auction: it joins the bids that came before it,
// then keeps it until its expiry.
func (f *qcJoinFn[A, B, S, U]) ProcessElement1(ctx weir.KeyedContext[int64], a A, out weir.Collector[U]) error {
	prev, _ := f.rec.Value()
	r := qcJoinRec[A, S]{Opened: true, Auction: a}
	r.Start, r.Expires = f.spec.AuctionSpan(a)
	if prev.Early {
		early := f.early.Get()
		f.early.Clear()
		for _, b := range early {
			if t := f.spec.BidTime(b); t < r.Start || t > r.Expires {
				continue
			}
			if acc, changed := f.spec.Fold(r.Acc, r.Has, b); changed {
				old, had := r.Acc, r.Has
				r.Acc, r.Has = acc, true
				if f.spec.Changed != nil {
					f.spec.Changed(a, old, had, acc, out)
				}
			}
		}
	}
	f.rec.Update(r)
	ctx.TimerService().RegisterEventTimeTimer(r.Expires)
	return nil
}

// ProcessElement2 takes a bid: folded into its auction's accumulator if it
// joins, kept for its auction if that has not come yet.
func (f *qcJoinFn[A, B, S, U]) ProcessElement2(ctx weir.KeyedContext[int64], b B, out weir.Collector[U]) error {
	t := f.spec.BidTime(b)
	r, _ := f.rec.Value()
	if r.Opened {
		if t < r.Start || t > r.Expires {
			return nil
		}
		acc, changed := f.spec.Fold(r.Acc, r.Has, b)
		if !changed {
			return nil
		}
		old, had := r.Acc, r.Has
		r.Acc, r.Has = acc, true
		f.rec.Update(r)
		if f.spec.Changed != nil {
			f.spec.Changed(r.Auction, old, had, acc, out)
		}
		return nil
	}
	ts := ctx.TimerService()
	if t <= ts.CurrentWatermark() {
		return nil // late: an auction it joins would be late too
	}
	f.early.Add(b)
	if !r.Early {
		// One timer for the key's early bids: at the first one's time;
		// it sets the next for the bids it leaves.
		f.rec.Update(qcJoinRec[A, S]{Early: true})
		ts.RegisterEventTimeTimer(t)
	}
	return nil
}

// OnTimer closes the auction at its expiry, or drops the early bids the
// watermark passed (and sets a timer for the earliest of the others).
func (f *qcJoinFn[A, B, S, U]) OnTimer(ctx weir.OnTimerContext[int64], ts int64, out weir.Collector[U]) error {
	r, ok := f.rec.Value()
	switch {
	case !ok:
	case r.Opened:
		if ts < r.Expires {
			return nil // an early bid's timer; they were joined when the auction came
		}
		if f.spec.Closed != nil {
			f.spec.Closed(r.Auction, r.Acc, r.Has, out)
		}
		f.rec.Clear()
	case r.Early:
		early := f.early.Get()
		keep := early[:0]
		next := int64(math.MaxInt64)
		for _, b := range early {
			if t := f.spec.BidTime(b); t > ts {
				keep = append(keep, b)
				next = min(next, t)
			}
		}
		if len(keep) == 0 {
			f.early.Clear()
			f.rec.Clear()
			return nil
		}
		if len(keep) < len(early) {
			f.early.Update(keep)
		}
		ctx.TimerService().RegisterEventTimeTimer(next)
	}
	return nil
}
