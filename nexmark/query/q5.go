package query

import (
	"slices"
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
// (all of them on a tie). It runs as Flink's slicing window aggregation
// does, over two operators:
//   - The bids, cut down to their auction before the exchange, are keyed by
//     auction and counted in Weir's tumbling event-time windows of 2 s, the
//     slices every hop window is made of (a window [k*2 s, k*2 s + 10 s) is
//     five slices). When a slice fires, its count goes to each of the five
//     windows that hold the slice.
//   - Keyed by window start, a keyed process function appends the slices'
//     counts to the window's list state, and an event-time timer at the
//     window's last ms (all its slices fired before the watermark got
//     there) adds them up per auction, emits the auctions with the largest
//     count and clears the window's state.
//
// So each auction costs one timer per 2 s slice, not one per (auction,
// window) as Weir's sliding windows would (five times as many timers, the
// larger part of the query's cost), and no operator holds all windows:
// each window's state is under its own key.
//
// Append-only, as in Flink, where the join of the two window aggregates
// only ever inserts. Deviation, for late bids only (none in Nexmark's
// stream, ordered, with watermarks 4 s behind): a bid that comes after its
// slice fired is dropped from all its windows, where Flink's slicing
// aggregation still counts it in those of its windows not yet fired.
func init() {
	register(Query{
		Name:    "q5",
		Columns: []string{"auction", "num"},
		Build: func(in *Input) error {
			auctions := weir.Map(Bids(in.Events), func(b nexmark.Bid) int64 { return b.Auction }).Name("q5 auctions")
			keyed := weir.KeyBy(auctions, func(a int64) int64 { return a })
			counts := weir.WindowAggregateProcess(weir.Window(keyed, weir.TumblingEventTimeWindows(q5Slide*time.Millisecond)),
				qbCount[int64]{}, weir.ProcessWindowFunc[int64, int64, q5Count](q5EmitSlice)).Name("q5 bids per auction and slice")
			byWindow := weir.KeyBy(counts, func(c q5Count) int64 { return c.Start })
			hot := weir.ProcessKeyed(byWindow, weir.KeyedProcessFunction[int64, q5Count, q5Count](&q5Hottest{})).Name("q5 hottest per window")
			Emit(in, hot, func(c q5Count) Row { return Row{c.Auction, c.Num} })
			return nil
		},
	})
}

// q5Size and q5Slide are the hop windows' size and slide in ms; slices are
// q5Slide long.
const (
	q5Size  = 10_000
	q5Slide = 2_000
)

// q5Count is a count of bids on an auction in the window starting at
// Start (from one slice, or the window's total).
type q5Count struct{ Auction, Start, Num int64 }

// q5EmitSlice sends a slice's count to each window holding the slice.
func q5EmitSlice(ctx weir.WindowContext[int64], counts []int64, out weir.Collector[q5Count]) error {
	a, slice := ctx.CurrentKey(), ctx.Window().Start
	for start := slice - q5Size + q5Slide; start <= slice; start += q5Slide {
		out.Collect(q5Count{Auction: a, Start: start, Num: counts[0]})
	}
	return nil
}

// q5Hottest adds up, per window, the auctions' counts over its slices, and
// emits the auctions with the largest count when the watermark passes the
// window's end. A window's slice counts are appended to list state (one
// append, no lookup per count: an auction's counts come once per slice)
// and added up per auction only when the window fires, in an array
// indexed by auction id when the ids are dense, as Nexmark's are (a Go map
// otherwise). Not map state (auction -> count): it would do the same work
// with a map lookup per count, a cache miss in a map of every auction of
// the window.
type q5Hottest struct {
	counts state.ListState[q5Pair]
	// armed holds the windows whose timer this instance registered, so
	// that a count does not register it again (registering twice keeps
	// one timer: after a restore, armed is empty and the first count
	// registers it again, harmlessly).
	armed map[int64]struct{}
	sums  []int64 // OnTimer's dense sums, reused
}

// q5Pair is an auction's count in one slice of a window.
type q5Pair struct{ Auction, Num int64 }

func (h *q5Hottest) Open(ctx weir.KeyedRuntimeContext) error {
	h.counts = state.GetListState(ctx.State(), state.ListDescriptor[q5Pair]{Name: "q5-slice-counts", Codec: codec.MustFor[q5Pair]()})
	h.armed = map[int64]struct{}{}
	return nil
}

func (h *q5Hottest) ProcessElement(ctx weir.KeyedContext[int64], c q5Count, _ weir.Collector[q5Count]) error {
	if _, ok := h.armed[c.Start]; !ok {
		// The window's timer at its last ms: its slices all fire, and
		// send their counts, before the watermark passes it.
		ctx.TimerService().RegisterEventTimeTimer(c.Start + q5Size - 1)
		h.armed[c.Start] = struct{}{}
	}
	h.counts.Add(q5Pair{Auction: c.Auction, Num: c.Num})
	return nil
}

func (h *q5Hottest) OnTimer(ctx weir.OnTimerContext[int64], _ int64, out weir.Collector[q5Count]) error {
	start := ctx.CurrentKey()
	delete(h.armed, start)
	pairs := h.counts.Get()
	h.counts.Clear()
	if len(pairs) == 0 {
		return nil
	}
	lo, hi := pairs[0].Auction, pairs[0].Auction
	for _, p := range pairs {
		lo, hi = min(lo, p.Auction), max(hi, p.Auction)
	}
	if span := uint64(hi) - uint64(lo); span < uint64(4*len(pairs)+1024) {
		// Dense ids: sum in an array, then emit in id order.
		n := int(span) + 1
		if cap(h.sums) < n {
			h.sums = make([]int64, n)
		}
		sums := h.sums[:n]
		clear(sums)
		for _, p := range pairs {
			sums[p.Auction-lo] += p.Num
		}
		best := slices.Max(sums)
		for i, n := range sums {
			if n == best && n > 0 {
				out.Collect(q5Count{Auction: lo + int64(i), Start: start, Num: n})
			}
		}
		return nil
	}
	sums := make(map[int64]int64, len(pairs))
	for _, p := range pairs {
		sums[p.Auction] += p.Num
	}
	var best int64
	for _, n := range sums {
		best = max(best, n)
	}
	for a, n := range sums {
		if n == best {
			out.Collect(q5Count{Auction: a, Start: start, Num: n})
		}
	}
	return nil
}
