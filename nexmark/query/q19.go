package query

import (
	"fmt"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q19, the ten highest bids of each auction with their rank (Top-N):
//
//	SELECT * FROM
//	(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
//	WHERE rank_number <= 10;
//
// Flink runs this on an append-only input as AppendOnlyTopNFunction with
// the rank number in the output: per auction a buffer of the best rows by
// price; rows of equal price are kept in arrival order (a later row ranks
// below an earlier one of the same price, and one equal to the 10th when
// the buffer is full does not enter). A row entering at rank r updates
// every row from r down: the row that was at rank i is retracted
// (UPDATE_BEFORE) and the one now at rank i inserted (UPDATE_AFTER), and
// the row pushed out of rank 10 is retracted and dropped for good.
//
// Here: the bids keyed by auction, a keyed process function with the
// auction's top ten bids in rank order (q19Top, a fixed array behind a
// pointer in an aggregating state, changed in place), and the same
// changes into EmitChanges: for each rank from the new bid's down,
// Retract(old row, rank) then Insert(new row, rank), the rows carried as
// the bids' encodings (parsed only if a row is asked for). A bid that does
// not enter touches nothing but the read. The state lives as long as the
// auction may get bids, forever, as Flink keeps it (no TTL).
//
// Before the exchange, each source subtask drops the bids that cannot
// enter (q19Prefilter): a bid that ten bids of the same subtask rank before
// never enters, since those ten reach the top-N operator before it (one
// channel keeps its order) and stay in its top ten or are pushed out by
// better ones. The global result and changes are the same; most bids on
// busy auctions (the hot auction gets half of all bids) then skip the
// exchange and the state read. The filter keeps a price and dateTime per rank per auction
// in memory, not checkpointed (after a restore it starts empty and lets
// everything through until it has learned again) and bounded (a table of
// 1024 auctions by id: an auction that takes another's place starts over).
//
// Ties on price: by dateTime, earlier first, then by arrival (a later
// arrival below an earlier one of the same price and dateTime). On an
// input in dateTime order, as one source split delivers it, this is
// Flink's arrival order exactly; at parallelism > 1 the bids of one auction
// come from several splits in an order that only timing decides, and there
// Flink's ranks of equal prices depend on that timing while these follow
// dateTime (deterministic).
func init() {
	register(Query{
		Name:    "q19",
		Columns: append(append([]string(nil), qdBidColumns...), "rank_number"),
		Build: func(in *Input) error {
			bids := weir.Process(in.Events, weir.ProcessFunction[nexmark.Event, qdEncBid](&q19Prefilter{})).
				Name("q19 bids that may enter the top 10").WithCodec(q19BidCodec{})
			keyed := weir.KeyBy(bids, func(b qdEncBid) int64 { return b.Bid.Auction })
			changes := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[int64, qdEncBid, Change[q19Ranked]](&q19TopN{})).
				Name("q19 top 10 bids per auction")
			EmitChanges(in, changes, q19Row)
			return nil
		},
	})
}

// q19N is the N of the Top-N.
const q19N = 10

// q19Ranked is a row of q19's result: a bid, in its qdBidCodec encoding,
// and its rank (1 to 10). The changes carry the encoding the bid is kept
// in, and the bid is parsed only when a row is asked for (q19Row): most
// of the changes a run makes are discarded or only counted.
type q19Ranked struct {
	Enc  string
	Rank int64
}

// q19Row is r as a row of q19's result table.
func q19Row(r q19Ranked) Row {
	b, err := qdParseBid(r.Enc)
	if err != nil {
		panic(fmt.Sprintf("q19: a ranked bid: %v", err))
	}
	return append(qdBidRow(&b, 1), r.Rank)
}

// q19TopN keeps an auction's best bids, best first.
type q19TopN struct {
	top state.AggregatingState[q19Insert, *q19Top]
}

// q19Top is an auction's top bids, best first. The state holds a pointer
// to it, so that a change is made in place (no copy of the ten bids out
// of state and back) and the state table's slots stay small as it grows
// to every auction seen. It is an aggregating state's accumulator, which
// the state lets q19Add change in place: after a checkpoint the state
// first gives q19Add a copy (through q19TopCodec), and the snapshot keeps
// the original. Each bid is its price and dateTime (what ranks it) and its
// encoding (qdEncBid.Enc, what it is emitted from).
type q19Top struct {
	N    int
	Bids [q19N]q19Entry
}

// q19Entry is a bid of a q19Top.
type q19Entry struct {
	Price, DateTime int64
	Enc             string
}

// q19Insert is a bid entering a top at rank Pos+1 (Pos < q19N).
type q19Insert struct {
	Pos   int
	Entry q19Entry
}

func (f *q19TopN) Open(ctx weir.KeyedRuntimeContext) error {
	f.top = state.GetAggregatingState(ctx.State(), state.AggregatingDescriptor[q19Insert, *q19Top, *q19Top]{
		Name:     "q19-top-bids",
		AccCodec: q19TopPtrCodec{},
		Create:   func() *q19Top { return new(q19Top) },
		Add:      q19Add,
		Result:   func(t *q19Top) *q19Top { return t },
	})
	return nil
}

// q19Add inserts a bid into t at its rank, the bids from there moving
// down one rank and the one at rank 10 leaving.
func q19Add(in q19Insert, t *q19Top) *q19Top {
	n := min(t.N+1, q19N)
	copy(t.Bids[in.Pos+1:n], t.Bids[in.Pos:n-1])
	t.Bids[in.Pos] = in.Entry
	t.N = n
	return t
}

// q19Before says whether a bid of price p and dateTime t ranks before e.
func q19Before(p, t int64, e *q19Entry) bool {
	return p > e.Price || p == e.Price && t < e.DateTime
}

var q19Empty q19Top

func (f *q19TopN) ProcessElement(_ weir.KeyedContext[int64], b qdEncBid, out weir.Collector[Change[q19Ranked]]) error {
	top, ok := f.top.Get()
	if !ok {
		top = &q19Empty
	}
	pos := top.N
	for i := range top.N {
		if q19Before(b.Bid.Price, b.Bid.DateTime, &top.Bids[i]) {
			pos = i
			break
		}
	}
	if pos >= q19N {
		return nil
	}
	// From pos down, each rank's row is retracted and the row now there
	// inserted, the bids moving down one rank; the one at rank 10 goes.
	// The row now at pos is b; each row below is the one retracted just
	// above it.
	n := min(top.N+1, q19N)
	now := b.enc()
	for i := pos; i < n; i++ {
		if i < top.N {
			old := top.Bids[i].Enc
			out.Collect(Change[q19Ranked]{Retract: true, Value: q19Ranked{Enc: old, Rank: int64(i + 1)}})
			out.Collect(Change[q19Ranked]{Value: q19Ranked{Enc: now, Rank: int64(i + 1)}})
			now = old
		} else {
			out.Collect(Change[q19Ranked]{Value: q19Ranked{Enc: now, Rank: int64(i + 1)}})
		}
	}
	f.top.Add(q19Insert{Pos: pos, Entry: q19Entry{Price: b.Bid.Price, DateTime: b.Bid.DateTime, Enc: b.Enc}})
	return nil
}

// q19BidCodec writes a qdEncBid's bid as qdBidCodec does. It reads only
// what the top-N needs: the bid's numbers, and its whole encoding as the
// Enc, carved from a p1Arena block (the bids that enter a top are most of
// those that cross, and most stay in it for good, as Flink keeps them);
// the Bid's strings stay empty (they are in the Enc, parsed when a row is
// asked for).
type q19BidCodec struct{}

func (q19BidCodec) AppendEncode(dst []byte, b qdEncBid) []byte {
	return qdBidCodec{}.AppendEncode(dst, b.Bid)
}

func (q19BidCodec) Decode(src []byte) (qdEncBid, int, error) {
	b, n, err := qdBidCodec{}.decode(src, false)
	if err != nil {
		return qdEncBid{}, 0, err
	}
	return qdEncBid{Bid: b, Enc: p1String(src[:n])}, n, nil
}

// q19TopPtrCodec writes a *q19Top as q19TopCodec does.
type q19TopPtrCodec struct{}

func (q19TopPtrCodec) AppendEncode(dst []byte, t *q19Top) []byte {
	return q19TopCodec{}.AppendEncode(dst, *t)
}

func (q19TopPtrCodec) Decode(src []byte) (*q19Top, int, error) {
	t, n, err := q19TopCodec{}.Decode(src)
	if err != nil {
		return nil, 0, err
	}
	return &t, n, nil
}

// q19TopCodec writes a q19Top as its count and its bids.
type q19TopCodec struct{}

func (q19TopCodec) AppendEncode(dst []byte, t q19Top) []byte {
	dst = append(dst, byte(t.N))
	for i := range t.N {
		dst = append(dst, t.Bids[i].Enc...)
	}
	return dst
}

func (q19TopCodec) Decode(src []byte) (q19Top, int, error) {
	var t q19Top
	if len(src) < 1 {
		return t, 0, codec.ErrTruncated
	}
	if src[0] > q19N {
		return t, 0, fmt.Errorf("%w: %d bids in a top %d", codec.ErrCorrupt, src[0], q19N)
	}
	t.N = int(src[0])
	i := 1
	for k := range t.N {
		_, n, err := qdBidCodec{}.decode(src[i:], false)
		if err != nil {
			return q19Top{}, 0, err
		}
		enc := string(src[i : i+n])
		t.Bids[k] = q19Entry{Price: qdNum(enc, 16), DateTime: qdNum(enc, 24), Enc: enc}
		i += n
	}
	return t, i, nil
}

// q19Prefilter passes on the bids that may enter their auction's top ten:
// those not ranked after ten earlier bids of the same subtask. It
// remembers auctions in a direct-mapped table (an auction's place is its
// id modulo the table's size): an auction that takes the place of another
// makes the filter start over for that one, which only lets more bids
// through. Nexmark's bids go to the last 100 or so auctions, ids in a
// window that slides slowly, so the live auctions rarely collide, and the
// table (176 KiB) stays in cache where a map of every auction did not.
type q19Prefilter struct {
	tops *[q19PrefilterAuctions]q19Local
}

// q19Local is an auction's best (price, dateTime) pairs seen by one
// subtask, best first (n of them: 0 for a free place).
type q19Local struct {
	auction int64
	n       int
	price   [q19N]int64
	time    [q19N]int64
}

// q19PrefilterAuctions is the size of a prefilter's table (a power of 2).
const q19PrefilterAuctions = 1 << 10

func (f *q19Prefilter) ProcessElement(_ weir.Context, e nexmark.Event, out weir.Collector[qdEncBid]) error {
	if e.Type != nexmark.BidEvent {
		return nil
	}
	b := &e.Bid
	if f.tops == nil {
		f.tops = new([q19PrefilterAuctions]q19Local)
	}
	t := &f.tops[uint64(b.Auction)%q19PrefilterAuctions]
	if t.auction != b.Auction {
		t.auction, t.n = b.Auction, 0
	}
	pos := t.n
	for i := t.n - 1; i >= 0; i-- {
		if b.Price > t.price[i] || b.Price == t.price[i] && b.DateTime < t.time[i] {
			pos = i
		} else {
			break
		}
	}
	if pos >= q19N {
		return nil
	}
	last := min(t.n, q19N-1)
	copy(t.price[pos+1:last+1], t.price[pos:last])
	copy(t.time[pos+1:last+1], t.time[pos:last])
	t.price[pos], t.time[pos] = b.Price, b.DateTime
	t.n = last + 1
	out.Collect(qdEncBid{Bid: *b})
	return nil
}
