package query

import (
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q11, user sessions: the number of bids of each bidder per session, a
// session ending after 10 s without a bid of that bidder.
//
//	INSERT INTO nexmark_q11
//	SELECT
//	    B.bidder,
//	    count(*) as bid_count,
//	    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
//	    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
//	FROM bid B
//	GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
//
// The bids are cut down to their bidder before the exchange, keyed by it,
// and counted in Weir's event-time session windows with a 10 s gap
// (EventTimeSessionWindows, a merging window assigner) by an incremental
// count: one int64 per bidder and session, merged when sessions merge. As
// in Flink (TimeWindow.intersects), each bid opens [dateTime, dateTime +
// 10 s) and windows that overlap or touch merge, so bids exactly 10 s apart
// are one session; SESSION_START is the first bid's time and SESSION_END
// the last bid's time + 10 s (epoch ms). A session fires once, when the
// watermark passes its end - 1; the window operator then clears its state.
// Late bids (none in Nexmark's ordered stream) are dropped, as Flink's
// window aggregation drops them.
func init() {
	register(Query{
		Name:    "q11",
		Columns: []string{"bidder", "bid_count", "starttime", "endtime"},
		Build: func(in *Input) error {
			bidders := weir.Map(Bids(in.Events), func(b nexmark.Bid) int64 { return b.Bidder }).Name("q11 bidders")
			keyed := weir.KeyBy(bidders, func(b int64) int64 { return b })
			sessions := weir.WindowAggregateProcess(weir.Window(keyed, weir.EventTimeSessionWindows(10*time.Second)),
				qbCount[int64]{}, weir.ProcessWindowFunc[int64, int64, q11Session](q11Emit)).Name("q11 sessions")
			Emit(in, sessions, func(s q11Session) Row { return Row{s.Bidder, s.Count, s.Start, s.End} })
			return nil
		},
	})
}

// q11Session is one bidder's session and its count of bids.
type q11Session struct{ Bidder, Count, Start, End int64 }

func q11Emit(ctx weir.WindowContext[int64], counts []int64, out weir.Collector[q11Session]) error {
	w := ctx.Window()
	out.Collect(q11Session{Bidder: ctx.CurrentKey(), Count: counts[0], Start: w.Start, End: w.End})
	return nil
}
