package query

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q6, average selling price by seller: per seller, the average price of
// its last closed auctions' winning bids. Nexmark's SQL (not in
// bench/flink: Flink's SQL rejects it, its OVER window cannot consume the
// Top-1's retractions, and Q.dateTime is no longer a time attribute after
// the regular join):
//
//	SELECT Q.seller, AVG(Q.price) OVER
//	    (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
//	FROM (
//	    SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
//	    FROM (SELECT A.id, A.seller, B.price, B.dateTime
//	        FROM auction AS A, bid AS B
//	        WHERE A.id = B.auction and B.dateTime between A.dateTime and A.expires)
//	    WHERE rownum <= 1
//	) AS Q;
//
// into nexmark_q6 (seller VARCHAR, avg_price BIGINT). What it computes
// here, where the SQL is not runnable or leaves it open:
//
//   - Q's rows are the winning bids of closed auctions: an auction's top
//     bid is final only when the auction closes, that is when the
//     watermark passes A.expires (Nexmark's comment: "for their last 10
//     closed auctions"; Beam's Query6 also takes winners at the close). An
//     auction without a joined bid has no row. At the end of the input
//     every auction closes.
//   - The winning bid: the highest price; among equal prices (the SQL
//     orders by price alone, and ROW_NUMBER keeps the first that came) the
//     earliest dateTime, which is the first to come in order.
//   - The OVER order: a row exists from its auction's close, so the rows
//     of a seller are taken in the order the auctions close (A.expires),
//     then by the winning bid's dateTime (the SQL's Q.dateTime) and the
//     auction id. Ordering strictly by the winning bid's dateTime would
//     make every row wait until all the seller's auctions that started
//     before that bid had closed; a row comes out at its auction's close.
//   - The frame is the SQL's: the row and the 10 rows before it, so up to
//     11 prices (the comment's "last 10" would be 9 PRECEDING).
//   - AVG of the BIGINT price is a BIGINT (sum / count truncated, Java's
//     long division); the seller is written as a VARCHAR (decimal).
//   - One row per closed auction with a winner, appended (Emit): an OVER
//     aggregate emits a row per input row and never updates it.
//
// How: the join and the top bid per auction run in qcJoin (qc.go, keyed by
// auction id; the accumulator is the top bid's price and dateTime); at the
// auction's expiry (event-time timer) it sends the winner, timestamped
// A.expires, to an operator keyed by the seller. Winners of one seller come
// from several join subtasks out of order, so that operator keeps them
// per expiry (state "q6-pending", a map from A.expires to the winners)
// with an event-time timer at A.expires; when the watermark passes it, the
// winners of that expiry are sorted and each gives a row with the seller's
// last 10 prices before it (state "q6-recent", a ring of 10, kept per
// seller as an OVER window's state is).
func init() {
	register(Query{
		Name:    "q6",
		Columns: []string{"seller", "avg_price"},
		Build: func(in *Input) error {
			auctions := weir.Map(Auctions(in.Events), func(a nexmark.Auction) q6Auction {
				return q6Auction{ID: a.ID, DateTime: a.DateTime, Expires: a.Expires, Seller: a.Seller}
			}).Name("q6 auctions")
			winners, err := qcJoin(auctions, qcBidPrices(in.Events), qcJoinSpec[q6Auction, qcBidPrice, q6Top, q6Win]{
				Name:        "q6 join and winner per auction",
				AuctionID:   func(a q6Auction) int64 { return a.ID },
				AuctionSpan: func(a q6Auction) (int64, int64) { return a.DateTime, a.Expires },
				BidAuction:  func(b qcBidPrice) int64 { return b.Auction },
				BidTime:     func(b qcBidPrice) int64 { return b.DateTime },
				Fold: func(top q6Top, has bool, b qcBidPrice) (q6Top, bool) {
					if has && (b.Price < top.Price || b.Price == top.Price && b.DateTime >= top.DateTime) {
						return top, false
					}
					return q6Top{Price: b.Price, DateTime: b.DateTime}, true
				},
				Closed: func(a q6Auction, top q6Top, has bool, out weir.Collector[q6Win]) {
					if has {
						out.Collect(q6Win{Seller: a.Seller, Auction: a.ID, Expires: a.Expires, Price: top.Price, BidTime: top.DateTime})
					}
				},
			})
			if err != nil {
				return err
			}
			bySeller := weir.KeyByWithCodec(winners, func(w q6Win) int64 { return w.Seller }, codec.Int64())
			avgs := weir.ProcessKeyed(bySeller, weir.KeyedProcessFunction[int64, q6Win, q6Avg](&q6Average{})).Name("q6 average of the last winners per seller")
			Emit(in, avgs, func(a q6Avg) Row { return Row{strconv.FormatInt(a.Seller, 10), a.Avg} })
			return nil
		},
	})
}

// q6Preceding is the OVER frame's 10 PRECEDING.
const q6Preceding = 10

// q6Auction is what q6 keeps of an auction.
type q6Auction struct {
	ID, DateTime, Expires, Seller int64
}

// q6Top is an auction's top bid so far.
type q6Top struct {
	Price, DateTime int64
}

// q6Win is the winning bid of a closed auction.
type q6Win struct {
	Seller, Auction, Expires, Price, BidTime int64
}

// q6Avg is a row of q6's result.
type q6Avg struct {
	Seller, Avg int64
}

// q6Recent are a seller's last prices: Prices[i % q6Preceding] for the
// N-th, the last min(N, q6Preceding) of them.
type q6Recent struct {
	N      int64
	Prices [q6Preceding]int64
}

// q6Average turns each seller's winners, in their order, into rows.
type q6Average struct {
	pending state.MapState[int64, []q6Win]
	recent  state.ValueState[q6Recent]
}

func (f *q6Average) Open(ctx weir.KeyedRuntimeContext) error {
	f.pending = state.GetMapState(ctx.State(), state.MapDescriptor[int64, []q6Win]{Name: "q6-pending", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(codec.MustFor[q6Win]())})
	f.recent = state.GetValueState(ctx.State(), state.ValueDescriptor[q6Recent]{Name: "q6-recent", Codec: codec.MustFor[q6Recent]()})
	return nil
}

func (f *q6Average) ProcessElement(ctx weir.KeyedContext[int64], w q6Win, _ weir.Collector[q6Avg]) error {
	ws, _ := f.pending.Get(w.Expires)
	f.pending.Put(w.Expires, append(slices.Clip(ws), w)) // a new slice: state values are read-only
	ctx.TimerService().RegisterEventTimeTimer(w.Expires)
	return nil
}

func (f *q6Average) OnTimer(ctx weir.OnTimerContext[int64], ts int64, out weir.Collector[q6Avg]) error {
	ws, ok := f.pending.Get(ts)
	if !ok {
		return nil
	}
	f.pending.Remove(ts)
	if len(ws) > 1 {
		ws = slices.Clone(ws)
		slices.SortFunc(ws, func(a, b q6Win) int {
			if c := cmp.Compare(a.BidTime, b.BidTime); c != 0 {
				return c
			}
			return cmp.Compare(a.Auction, b.Auction)
		})
	}
	r, _ := f.recent.Value()
	for _, w := range ws {
		n := min(r.N, q6Preceding)
		sum := w.Price
		for _, p := range r.Prices[:n] {
			sum += p
		}
		out.Collect(q6Avg{Seller: ctx.CurrentKey(), Avg: sum / (n + 1)})
		r.Prices[r.N%q6Preceding] = w.Price
		r.N++
	}
	f.recent.Update(r)
	return nil
}
