package query

import (
	"math"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q12, the bids of each bidder per 10 s of processing time:
//
//	CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
//
//	SELECT bidder, count(*) as bid_count, window_start AS starttime, window_end AS endtime
//	FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
//	GROUP BY bidder, window_start, window_end;
//
// Flink's window aggregation assigns each bid, when it reaches the
// aggregation, to the 10 s window of the wall clock holding that moment,
// counts per bidder and window, and emits a window's count when processing
// time passes its end: an append-only result whose rows depend on how fast
// the job runs.
//
// Here: the bidders of the bids (an int64 per bid crosses the exchange),
// keyed by bidder, Weir's window operator with
// TumblingProcessingTimeWindows(10 s) and an incremental count
// (WindowAggregateProcess, one int64 per bidder and window in keyed state),
// the window's start and end (epoch ms) added by the process function.
// Times are epoch ms; Flink writes window_start and window_end as
// TIMESTAMP(3) in its session time zone, the same instants when that zone
// is UTC (10 s windows are aligned alike in every zone).
//
// The end of a bounded input: Weir drops pending processing-time timers
// there (docs/architecture.md), and so does Flink (StreamOperatorWrapper
// quiesces the processing-time service before finish; WindowAggOperator
// has no endInput flush), so both would drop every window still open when
// the input ends, and with it the last up to 10 s of bids. This query
// fires them instead, so that its result is complete (every bid counted
// once): its trigger (q12Trigger) is the processing-time trigger plus an
// event-time timer at the end of time, which only the final watermark of
// a bounded input reaches. A custom trigger takes the window operator's
// trigger path rather than its fast path for the default trigger.
func init() {
	register(Query{
		Name:    "q12",
		Columns: []string{"bidder", "bid_count", "starttime", "endtime"},
		Build: func(in *Input) error {
			bidders := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[int64]) {
				if e.Type == nexmark.BidEvent {
					out.Collect(e.Bid.Bidder)
				}
			}).Name("q12 bidders")
			windows := weir.Window(weir.KeyBy(bidders, func(b int64) int64 { return b }), weir.TumblingProcessingTimeWindows(10*time.Second)).
				Trigger(q12Trigger{})
			counts := weir.WindowAggregateProcess(windows, weir.AggregateFunction[int64, int64, int64](qdCount{}),
				weir.ProcessWindowFunc[int64, int64, q12Count](func(ctx weir.WindowContext[int64], n []int64, out weir.Collector[q12Count]) error {
					w := ctx.Window()
					out.Collect(q12Count{Bidder: ctx.CurrentKey(), Count: n[0], Start: w.Start, End: w.End})
					return nil
				})).Name("q12 bids per bidder and 10 s of processing time")
			Emit(in, counts, func(c q12Count) Row { return Row{c.Bidder, c.Count, c.Start, c.End} })
			return nil
		},
	})
}

// q12Count is a row of q12's result.
type q12Count struct{ Bidder, Count, Start, End int64 }

// q12Trigger fires a processing-time window when processing time passes
// its end (as ProcessingTimeTrigger), or at the end of a bounded input,
// when the final watermark reaches its event-time timer at math.MaxInt64
// (registered per window: its namespace tells which window to fire).
type q12Trigger struct{}

// OnElement registers only the end-of-input timer: the window operator
// registers the window's cleanup timer at its max timestamp in processing
// time, and passes it to OnProcessingTime before it cleans up, so a timer of
// the trigger's own at the same time (ProcessingTimeTrigger's) would only
// cost a second lookup per element.
func (q12Trigger) OnElement(_ int64, _ int64, _ weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	ctx.RegisterEventTimeTimer(math.MaxInt64)
	return weir.Continue
}

func (q12Trigger) OnEventTime(t int64, _ weir.TimeWindow, _ weir.TriggerContext) weir.TriggerResult {
	if t == math.MaxInt64 {
		return weir.FireAndPurge // the end of the input
	}
	return weir.Continue
}

func (q12Trigger) OnProcessingTime(int64, weir.TimeWindow, weir.TriggerContext) weir.TriggerResult {
	return weir.Fire // the operator cleans the window up at the same time
}

func (q12Trigger) CanMerge() bool                               { return false }
func (q12Trigger) OnMerge(weir.TimeWindow, weir.OnMergeContext) {}

func (q12Trigger) Clear(w weir.TimeWindow, ctx weir.TriggerContext) {
	ctx.DeleteProcessingTimeTimer(w.MaxTimestamp())
	ctx.DeleteEventTimeTimer(math.MaxInt64)
}
