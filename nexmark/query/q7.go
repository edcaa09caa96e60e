package query

import (
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q7, highest bid: the bids whose price is the highest of a tumbling
// window of 10 s.
//
//	INSERT INTO nexmark_q7
//	SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra
//	from bid B
//	JOIN (
//	  SELECT MAX(price) AS maxprice, window_end as `dateTime`
//	  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY window_start, window_end
//	) B1
//	ON B.price = B1.maxprice
//	WHERE B.`dateTime` BETWEEN B1.`dateTime`  - INTERVAL '10' SECOND AND B1.`dateTime`;
//
// B1's dateTime is window_end, not a time attribute, so Flink runs a
// regular join, which keeps every bid. Its result: every bid whose price is
// the maximum of a window w and whose time is in [w.start, w.end], both
// ends included: the bids of w at its maximum (ties included), and a bid at
// exactly w.end (the first ms of the next window) at w's maximum too. The
// INSERT maps by position, so, as in Nexmark's text, the table's bidder
// column gets the price and its price column the bidder.
//
// The DataStream version keeps only what can match:
//   - q7Prune (per subtask, before any exchange) keeps a running maximum
//     of the last few windows it saw, and drops a bid that is below the
//     running maximum of its window and (for a bid at a window's end) of
//     the window ending there: the window's maximum can only be higher.
//     What is left (a few bids per window and subtask, but every bid at
//     the start of the first window a subtask sees, as it knows nothing
//     of the window ending there) becomes candidates keyed by the end of
//     the window they may match: one for its own window, another for the
//     window ending at its time. The running maxima are no state: after a
//     restore they start again and drop less.
//   - The window's MAX(price): the candidates of their own window, keyed by
//     window end, in Weir's tumbling event-time windows of 10 s with a max
//     reduce (no bid above a window's maximum is dropped, so it is exact).
//   - The join: the maxima and the candidates, connected and keyed by
//     window end (KeyedCoProcess), with per window the maximum once it
//     comes, and a list of the candidates not below the window's own bids
//     so far (nor off its maximum, once known); an event-time timer at the
//     window's end (when no bid at or before it can come any more, the
//     maximum having come at its end - 1) emits the candidates at the
//     maximum and clears the state.
//
// Append-only, as Flink's join of two insert-only inputs. Deviation: a
// late bid (none in Nexmark's ordered stream) is dropped here, where
// Flink's regular join would still match it against a maximum it keeps
// forever.
func init() {
	register(Query{
		Name:    "q7",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra"},
		Build: func(in *Input) error {
			cands := weir.Process(Bids(in.Events), weir.ProcessFunction[nexmark.Bid, q7Cand](&q7Prune{})).Name("q7 candidates")
			members := weir.FlatMap(cands, func(c q7Cand, out weir.Collector[q7Max]) {
				if !c.Boundary {
					out.Collect(q7Max{End: c.End, Price: c.Bid.Price})
				}
			}).Name("q7 prices")
			maxes := weir.WindowReduce(weir.Window(weir.KeyBy(members, func(m q7Max) int64 { return m.End }), weir.TumblingEventTimeWindows(q7Size*time.Millisecond)),
				func(a, b q7Max) q7Max {
					if b.Price > a.Price {
						return b
					}
					return a
				}).Name("q7 max price per window")
			joined := weir.KeyedCoProcess(weir.ConnectKeyed(
				weir.KeyBy(maxes, func(m q7Max) int64 { return m.End }),
				weir.KeyBy(cands, func(c q7Cand) int64 { return c.End })),
				weir.KeyedCoProcessFunction[int64, q7Max, q7Cand, q7Bid](&q7Join{})).Name("q7 join")
			Emit(in, joined, func(b q7Bid) Row { return Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra} })
			return nil
		},
	})
}

// q7Size is the windows' size in ms.
const q7Size = 10_000

// q7Bid is what the result needs of a bid.
type q7Bid struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
}

// q7Cand is a bid that may be at the maximum of the window ending at End:
// its own window, or (Boundary) the one ending at its time.
type q7Cand struct {
	End      int64
	Boundary bool
	Bid      q7Bid
}

// q7Max is a window's maximum price (so far), by the window's end.
type q7Max struct{ End, Price int64 }

// q7Prune drops the bids that cannot be at their window's maximum, with a
// running maximum of the last q7Slots windows (each subtask has its own).
type q7Prune struct {
	slots [q7Slots]struct {
		start, max int64
		ok         bool
	}
}

const q7Slots = 4

func (p *q7Prune) slot(start int64) int {
	i := (start / q7Size) % q7Slots
	if i < 0 {
		i += q7Slots
	}
	return int(i)
}

// observe adds price to the running maximum of the window starting at
// start and says whether it is at or above it.
func (p *q7Prune) observe(start, price int64) bool {
	s := &p.slots[p.slot(start)]
	switch {
	case !s.ok || start > s.start:
		s.start, s.max, s.ok = start, price, true
		return true
	case start < s.start: // an older window, no longer tracked
		return true
	case price < s.max:
		return false
	}
	s.max = price
	return true
}

// atLeast says whether price is at or above the running maximum of the
// window starting at start (true when it is not tracked).
func (p *q7Prune) atLeast(start, price int64) bool {
	s := &p.slots[p.slot(start)]
	return !s.ok || s.start != start || price >= s.max
}

func (p *q7Prune) ProcessElement(_ weir.Context, b nexmark.Bid, out weir.Collector[q7Cand]) error {
	start := qbWindowStart(b.DateTime, q7Size)
	member := p.observe(start, b.Price)
	boundary := b.DateTime == start && p.atLeast(start-q7Size, b.Price)
	if !member && !boundary {
		return nil
	}
	bid := q7Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra}
	if member {
		out.Collect(q7Cand{End: start + q7Size, Bid: bid})
	}
	if boundary {
		out.Collect(q7Cand{End: start, Boundary: true, Bid: bid})
	}
	return nil
}

// q7Window is the join's state of one window besides its candidates: its
// maximum once known, and the largest price of its own bids so far.
type q7Window struct {
	Max, Running int64
	HasMax       bool
}

// q7Join joins the windows' maxima with the candidate bids. The
// candidates go to list state (an append, also on Pebble), once they pass
// what the window's state tells.
type q7Join struct {
	win   state.ValueState[q7Window]
	cands state.ListState[q7Bid]
}

func (j *q7Join) Open(ctx weir.KeyedRuntimeContext) error {
	wc, err := codec.For[q7Window]()
	if err != nil {
		return err
	}
	bc, err := codec.For[q7Bid]()
	if err != nil {
		return err
	}
	j.win = state.GetValueState(ctx.State(), state.ValueDescriptor[q7Window]{Name: "q7-window", Codec: wc})
	j.cands = state.GetListState(ctx.State(), state.ListDescriptor[q7Bid]{Name: "q7-candidates", Codec: bc})
	return nil
}

func (j *q7Join) ProcessElement1(ctx weir.KeyedContext[int64], m q7Max, _ weir.Collector[q7Bid]) error {
	w, ok := j.win.Value()
	if !ok {
		// A window's timer: at its end, when every bid that can match it
		// has come (the maximum came at its end - 1).
		ctx.TimerService().RegisterEventTimeTimer(ctx.CurrentKey())
	}
	w.Max, w.HasMax = m.Price, true
	j.win.Update(w)
	return nil
}

func (j *q7Join) ProcessElement2(ctx weir.KeyedContext[int64], c q7Cand, _ weir.Collector[q7Bid]) error {
	w, ok := j.win.Value()
	p := c.Bid.Price
	switch {
	case w.HasMax && p != w.Max, p < w.Running:
		return nil // below a bid of the window: not its maximum
	case !ok:
		ctx.TimerService().RegisterEventTimeTimer(ctx.CurrentKey())
		fallthrough
	case !c.Boundary && p > w.Running:
		if !c.Boundary {
			w.Running = p
		}
		j.win.Update(w)
	}
	j.cands.Add(c.Bid)
	return nil
}

func (j *q7Join) OnTimer(_ weir.OnTimerContext[int64], _ int64, out weir.Collector[q7Bid]) error {
	if w, ok := j.win.Value(); ok && w.HasMax {
		for _, b := range j.cands.Get() {
			if b.Price == w.Max {
				out.Collect(b)
			}
		}
	}
	j.win.Clear()
	j.cands.Clear()
	return nil
}
