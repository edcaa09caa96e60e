package query

import (
	"fmt"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// Helpers of q15, q16 and q17: non-windowed GROUP BYs whose key includes
// DATE_FORMAT(dateTime, 'yyyy-MM-dd'), with updating results.

// qeDayMs is a day in milliseconds.
const qeDayMs = 24 * 60 * 60 * 1000

// qeDay is the day of an epoch-millisecond time, counted from 1970-01-01
// (UTC; rounded down, also before 1970): one day number per value of
// DATE_FORMAT(dateTime, 'yyyy-MM-dd') on Nexmark's zone-less TIMESTAMP(3).
func qeDay(ms int64) int64 {
	d := ms / qeDayMs
	if ms%qeDayMs < 0 {
		d--
	}
	return d
}

// qeDayString is DATE_FORMAT(day, 'yyyy-MM-dd') (only in row functions).
func qeDayString(day int64) string {
	return time.UnixMilli(day * qeDayMs).UTC().Format("2006-01-02")
}

// qeMinuteString is DATE_FORMAT(ms, 'HH:mm') (only in row functions).
func qeMinuteString(ms int64) string {
	m := (ms - qeDay(ms)*qeDayMs) / 60_000
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// qeBid is the part of a bid that q15 to q17 read: fixed size, so that the
// shuffle copies its memory instead of encoding it.
type qeBid struct {
	Auction, Bidder, Price, DateTime int64
}

// qeBids are the bids among events, reduced to qeBid in one step (not
// Bids then a map: that passes every bid's 80 bytes through one more
// operator and collector).
func qeBids(in *Input) weir.DataStream[qeBid] {
	return weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[qeBid]) {
		if e.Type == nexmark.BidEvent {
			b := &e.Bid
			out.Collect(qeBid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime})
		}
	}).Name("bid fields")
}

// qeRank is the price level of the queries' FILTER clauses: 1 for price
// < 10000, 2 for 10000 <= price < 1000000, 3 above.
func qeRank(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// qeRankCounts are q15's and q16's twelve counts; index 0 is the total,
// 1 to 3 the ranks: count(*), count(distinct bidder), count(distinct
// auction), each unfiltered and with the three FILTER clauses.
type qeRankCounts struct {
	Bids, Bidders, Auctions [4]int64
}

// values appends the counts in the result tables' order.
func (c *qeRankCounts) values(row Row) Row {
	for _, a := range [...]*[4]int64{&c.Bids, &c.Bidders, &c.Auctions} {
		for _, n := range a {
			row = append(row, n)
		}
	}
	return row
}

// qeDistinct keeps the distinct bidders and auctions of a group in keyed
// MapState (as Flink's distinct aggregates keep distinct values in a
// MapState), as bit sets: a value v is in the entry for v>>4, whose 64
// bits hold 4 bits for each of 16 values: the levels the value was seen at
// (bit 0: any, bit r: rank r). A new bit is a new distinct value of that
// count. Nexmark's ids are dense, so the maps of the groups with many
// distinct values (the hot channels of q16, q15's days) have up to 16
// times fewer entries than with one entry per value, and their lookups
// stay in cache. Bidders and auctions share one map (entry keys 2(v>>4)
// and 2(v>>4)+1, which cannot overflow): one map less to reach per bid.
type qeDistinct struct {
	sets state.MapState[int64, uint64]

	// What read found for the bid add counts: its bidder's and its
	// auction's entries, their bits and the shift of the bid's values in
	// them.
	be, ae       int64
	bs, as       uint
	bbits, abits uint64
}

func (d *qeDistinct) open(st state.KeyedStore) {
	d.sets = state.GetMapState(st, state.MapDescriptor[int64, uint64]{Name: "distinct bidders and auctions", UserKeyCodec: codec.Int64(), ValueCodec: codec.Uint64()})
}

// read reads the entries of b's bidder and auction, for add. Both reads
// come before any write, and before the group's accumulator is read: in a
// cold group each is a cache miss, and back to back they overlap.
func (d *qeDistinct) read(b *qeBid) {
	d.be, d.bs = qeEntry(b.Bidder, 0)
	d.ae, d.as = qeEntry(b.Auction, 1)
	d.bbits, _ = d.sets.Get(d.be)
	d.abits, _ = d.sets.Get(d.ae)
}

// add counts into c the bid read last.
func (d *qeDistinct) add(c *qeRankCounts, b *qeBid) {
	r := qeRank(b.Price)
	c.Bids[0]++
	c.Bids[r]++
	want := uint64(1 | 1<<r)
	qeAddDistinct(d.sets, d.be, d.bs, d.bbits, want, &c.Bidders)
	qeAddDistinct(d.sets, d.ae, d.as, d.abits, want, &c.Auctions)
}

// qeEntry is the map entry of value v of set (0 or 1) and the shift of
// its bits in the entry.
func qeEntry(v, set int64) (entry int64, shift uint) {
	return (v>>4)*2 + set, uint(v&15) * 4
}

// qeAddDistinct adds the levels want to those of the value at shift in
// entry, whose bits were read, puts the entry if that adds any, and counts
// the new ones.
func qeAddDistinct(m state.MapState[int64, uint64], entry int64, shift uint, bits, want uint64, counts *[4]int64) {
	added := want &^ (bits >> shift)
	if added == 0 {
		return
	}
	m.Put(entry, bits|added<<shift)
	for i := range counts {
		if added&(1<<i) != 0 {
			counts[i]++
		}
	}
}

func (d *qeDistinct) clear() { d.sets.Clear() }

// qeAggregator is what a qeDailyAgg aggregates with: add folds an element
// into the current key's accumulator and returns it (values, not pointers,
// which would escape through the interface: an allocation per element), and
// may keep more keyed state (open declares it, clear drops the current
// key's), which read reads for the element before the accumulator is read
// (so that their cache misses overlap) and add then uses.
type qeAggregator[T, A any] interface {
	open(st state.KeyedStore)
	read(v T)
	add(acc A, v T) A
	clear()
}

// qeGroupRow is one result of a qeDailyAgg: a group's key and aggregates.
type qeGroupRow[K, A any] struct {
	Key K
	Acc A
}

// qeDailyAgg is a non-windowed GROUP BY whose key includes a day, as
// Flink's GroupAggFunction runs it: a keyed process function over keys K
// (the GROUP BY's columns) of elements T, with each group's accumulator A
// in a ValueState (and what the aggregator keeps besides), whose results
// are a retract changelog: each element that changes its group's
// aggregates retracts the group's previous result and inserts the new one
// (the first inserts it; an element that changes nothing emits nothing, as
// Flink's does). Flink's default, without mini-batch: per element. Not per
// watermark, through a timer per changed group: the timers cost more than
// the changes, which a discarding sink takes in the same chain.
//
// State is dropped when the group's day is over: a timer at the day's last
// millisecond clears the group's state (its result stays in the table). An
// element of a day whose end the watermark has passed is late (more than
// the 4 s of out-of-orderness the watermark allows) and is dropped:
// Flink's group aggregation does not drop late elements, but keeps every
// group's state forever (no state TTL by default). The generator's events
// are never late. The cleanup costs a timer per group, each group cleared
// once.
type qeDailyAgg[K comparable, T any, A comparable] struct {
	// day is the day of a key; newAgg makes a subtask's aggregator.
	day    func(K) int64
	newAgg func() qeAggregator[T, A]

	agg qeAggregator[T, A]
	acc state.ValueState[A]
}

func (g *qeDailyAgg[K, T, A]) Open(ctx weir.KeyedRuntimeContext) error {
	accCodec, err := codec.For[A]()
	if err != nil {
		return err
	}
	st := ctx.State()
	g.acc = state.GetValueState(st, state.ValueDescriptor[A]{Name: "accumulator", Codec: accCodec})
	g.agg = g.newAgg()
	g.agg.open(st)
	return nil
}

func (g *qeDailyAgg[K, T, A]) ProcessElement(ctx weir.KeyedContext[K], v T, out weir.Collector[Change[qeGroupRow[K, A]]]) error {
	key := ctx.CurrentKey()
	ts := ctx.TimerService()
	end := (g.day(key)+1)*qeDayMs - 1
	if end <= ts.CurrentWatermark() {
		return nil // late: the group's state is gone
	}
	g.agg.read(v)
	prev, ok := g.acc.Value()
	acc := g.agg.add(prev, v)
	if ok {
		if acc == prev {
			return nil
		}
		out.Collect(Retract(qeGroupRow[K, A]{key, prev}))
	} else {
		ts.RegisterEventTimeTimer(end)
	}
	out.Collect(Insert(qeGroupRow[K, A]{key, acc}))
	g.acc.Update(acc)
	return nil
}

// OnTimer drops a group's state at the end of its day.
func (g *qeDailyAgg[K, T, A]) OnTimer(weir.OnTimerContext[K], int64, weir.Collector[Change[qeGroupRow[K, A]]]) error {
	g.acc.Clear()
	g.agg.clear()
	return nil
}

// qeDailyAggregate runs a qeDailyAgg over ks.
func qeDailyAggregate[K comparable, T any, A comparable](ks weir.KeyedStream[K, T], day func(K) int64, newAgg func() qeAggregator[T, A]) weir.DataStream[Change[qeGroupRow[K, A]]] {
	return weir.ProcessKeyed(ks, weir.KeyedProcessFunction[K, T, Change[qeGroupRow[K, A]]](&qeDailyAgg[K, T, A]{day: day, newAgg: newAgg}))
}
