package query

import (
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q5, hot items: per sliding window of 10 s every 2 s, the auctions with
// the most bids.
//
//	INSERT INTO nexmark_q5
//	SELECT AuctionBids.auction, AuctionBids.num
//	 FROM (
//	   SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
//	   FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//	   GROUP BY auction, window_start, window_end
//	 ) AS AuctionBids
//	 JOIN (
//	   SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
//	   FROM (
//	     SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
//	     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//	     GROUP BY auction, window_start, window_end
//	   ) AS CountBids
//	   GROUP BY CountBids.starttime, CountBids.endtime
//	 ) AS MaxBids
//	 ON AuctionBids.starttime = MaxBids.starttime AND
//	    AuctionBids.endtime = MaxBids.endtime AND
//	    AuctionBids.num >= MaxBids.maxn;
//
// Both sides of the join count the same thing, so the result is, per
// window, every auction whose count equals the window's largest count
// (all of them on a tie). The bids, cut down to their auction before the
// exchange, are keyed by auction and counted in Weir's sliding event-time
// windows (10 s every 2 s: windows [k*2 s, k*2 s + 10 s), the sliced window
// operator keeps one count per auction and 2 s slice). Each fired count
// goes, keyed by its window, to a keyed process function that keeps the
// window's largest count so far and the auctions that have it (state per
// window, not all windows in one place); an event-time timer at the
// window's last ms fires once all counts of the window are in (the window
// operator emits a window's counts before it forwards the watermark that
// fired it), emits the auctions and clears the state.
//
// Append-only, as in Flink, where the join of the two window aggregates
// only ever inserts. Late bids are dropped by the window operator, as by
// Flink's window aggregation.
func init() {
	register(Query{
		Name:    "q5",
		Columns: []string{"auction", "num"},
		Build: func(in *Input) error {
			auctions := weir.Map(Bids(in.Events), func(b nexmark.Bid) int64 { return b.Auction }).Name("q5 auctions")
			keyed := weir.KeyBy(auctions, func(a int64) int64 { return a })
			counts := weir.WindowAggregateProcess(weir.Window(keyed, weir.SlidingEventTimeWindows(q5Size*time.Millisecond, 2*time.Second)),
				qbCount[int64]{}, weir.ProcessWindowFunc[int64, int64, q5Count](q5EmitCount)).Name("q5 bids per auction")
			byWindow := weir.KeyBy(counts, func(c q5Count) int64 { return c.Start })
			hot := weir.ProcessKeyed(byWindow, weir.KeyedProcessFunction[int64, q5Count, q5Count](&q5Hottest{})).Name("q5 hottest per window")
			Emit(in, hot, func(c q5Count) Row { return Row{c.Auction, c.Num} })
			return nil
		},
	})
}

// q5Size is the windows' size in ms.
const q5Size = 10_000

// q5Count is the number of bids on an auction in the window starting at
// Start.
type q5Count struct{ Auction, Start, Num int64 }

func q5EmitCount(ctx weir.WindowContext[int64], counts []int64, out weir.Collector[q5Count]) error {
	out.Collect(q5Count{Auction: ctx.CurrentKey(), Start: ctx.Window().Start, Num: counts[0]})
	return nil
}

// q5Max is a window's largest count so far and the auctions that have it.
type q5Max struct {
	Num      int64
	Auctions []int64
}

// q5Hottest keeps, per window, the largest count and its auctions, and
// emits them when the watermark passes the window's end.
type q5Hottest struct {
	max state.ValueState[q5Max]
}

func (h *q5Hottest) Open(ctx weir.KeyedRuntimeContext) error {
	c, err := codec.For[q5Max]()
	if err != nil {
		return err
	}
	h.max = state.GetValueState(ctx.State(), state.ValueDescriptor[q5Max]{Name: "q5-max", Codec: c})
	return nil
}

func (h *q5Hottest) ProcessElement(ctx weir.KeyedContext[int64], c q5Count, _ weir.Collector[q5Count]) error {
	m, ok := h.max.Value()
	switch {
	case !ok:
		// The window's counts all carry its last ms as their timestamp
		// and come before the watermark that passes it.
		ctx.TimerService().RegisterEventTimeTimer(c.Start + q5Size - 1)
		m = q5Max{Num: c.Num, Auctions: []int64{c.Auction}}
	case c.Num > m.Num:
		m = q5Max{Num: c.Num, Auctions: []int64{c.Auction}}
	case c.Num == m.Num:
		// Appending never changes the elements a stored value (or a
		// snapshot of it) sees, so the stored slice may grow in place.
		m.Auctions = append(m.Auctions, c.Auction)
	default:
		return nil
	}
	h.max.Update(m)
	return nil
}

func (h *q5Hottest) OnTimer(ctx weir.OnTimerContext[int64], _ int64, out weir.Collector[q5Count]) error {
	m, ok := h.max.Value()
	if !ok {
		return nil
	}
	start := ctx.CurrentKey()
	for _, a := range m.Auctions {
		out.Collect(q5Count{Auction: a, Start: start, Num: m.Num})
	}
	h.max.Clear()
	return nil
}
