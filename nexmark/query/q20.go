package query

import (
	"fmt"
	"slices"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q20, expand bid with auction: every bid with its auction, for the
// auctions of category 10.
//
//	SELECT
//	    auction, bidder, price, channel, url, B.`dateTime`, B.extra,
//	    itemName, description, initialBid, reserve, A.`dateTime`, expires, seller, category, A.extra
//	FROM
//	    bid AS B INNER JOIN auction AS A on B.auction = A.id
//	WHERE A.category = 10;
//
// A regular (unwindowed) inner join of two append streams, so its results
// are append-only (Emit). As Flink plans it, the filter goes before the
// join, and the join is a keyed two-input operator (ConnectKeyed and
// KeyedCoProcess, keyed by bid.auction and auction.id) that keeps both
// sides in keyed state and joins each arriving element with the other
// side's state: a ListState of every bid of the key, and a ValueState of
// the key's auctions of category 10. Like Flink's join without a state TTL
// (its default), it keeps all of that forever: SQL does not know auction
// ids are unique, so a bid can meet an auction that comes any time later,
// and state grows with every bid (about as much as the bids themselves).
// Bids cross the shuffle in their q20BidCodec encoding, which the
// receiver keeps as one string (q20Bid.Enc) that the bid's strings are
// substrings of, and that string is what the bid state keeps: a value
// of 16 bytes with one pointer, to memory without pointers,
// instead of a bid of 80 bytes with three: less to copy as the lists grow,
// and less for the garbage collector to trace in the ever-growing state.
func init() {
	register(Query{
		Name: "q20",
		Columns: []string{"auction", "bidder", "price", "channel", "url", "bid_dateTime", "bid_extra",
			"itemName", "description", "initialBid", "reserve", "auction_dateTime", "expires", "seller", "category", "auction_extra"},
		Build: func(in *Input) error {
			encoded := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[q20Bid]) {
				if e.Type == nexmark.BidEvent {
					out.Collect(q20Bid{Bid: e.Bid})
				}
			}).WithCodec(q20BidCodec{})
			bids := weir.KeyBy(encoded.Name("bids to join"), func(b q20Bid) int64 { return b.Bid.Auction })
			cat10 := weir.Filter(Auctions(in.Events), func(a nexmark.Auction) bool { return a.Category == 10 }).Name("category 10")
			auctions := weir.KeyBy(cat10, func(a nexmark.Auction) int64 { return a.ID })
			joined := weir.KeyedCoProcess(weir.ConnectKeyed(bids, auctions), weir.KeyedCoProcessFunction[int64, q20Bid, nexmark.Auction, q20Row](&q20Join{}))
			Emit(in, joined.Name("q20 join"), func(r q20Row) Row {
				b, err := qdParseBid(r.Bid)
				if err != nil {
					panic(fmt.Sprintf("q20: a joined bid: %v", err))
				}
				a := r.Auction
				return Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra,
					a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra}
			})
			return nil
		},
	})
}

// q20Row is a bid, in its qdBidCodec encoding (parsed only when a row is
// asked for: most runs discard the rows), with its auction (kept in state:
// not to be changed).
type q20Row struct {
	Bid     string
	Auction *nexmark.Auction
}

// q20Join is the join's keyed state and its two sides.
type q20Join struct {
	bids     state.ListState[string] // q20Bid.Enc
	auctions state.ValueState[[]nexmark.Auction]
}

func (j *q20Join) Open(ctx weir.KeyedRuntimeContext) error {
	auctionsCodec, err := codec.For[[]nexmark.Auction]()
	if err != nil {
		return err
	}
	j.bids = state.GetListState(ctx.State(), state.ListDescriptor[string]{Name: "bids", Codec: codec.String()})
	j.auctions = state.GetValueState(ctx.State(), state.ValueDescriptor[[]nexmark.Auction]{Name: "auctions", Codec: auctionsCodec})
	return nil
}

// ProcessElement1 joins a bid with the auctions so far and keeps it.
func (j *q20Join) ProcessElement1(_ weir.KeyedContext[int64], b q20Bid, out weir.Collector[q20Row]) error {
	if b.Enc == "" { // not through the codec (a chained edge)
		b.Enc = string(q20BidCodec{}.AppendEncode(nil, b))
	}
	auctions, _ := j.auctions.Value()
	for i := range auctions {
		out.Collect(q20Row{Bid: b.Enc, Auction: &auctions[i]})
	}
	j.bids.Add(b.Enc)
	return nil
}

// ProcessElement2 joins an auction with the bids so far and keeps it.
func (j *q20Join) ProcessElement2(_ weir.KeyedContext[int64], a nexmark.Auction, out weir.Collector[q20Row]) error {
	auctions, _ := j.auctions.Value()
	// A new slice: the old one may be shared with a snapshot, and the
	// rows emitted point into it.
	auctions = append(slices.Clip(auctions), a)
	j.auctions.Update(auctions)
	for _, enc := range j.bids.Get() {
		out.Collect(q20Row{Bid: enc, Auction: &auctions[len(auctions)-1]})
	}
	return nil
}

// q20Bid is a bid, and on the receiving side of the shuffle its encoding.
type q20Bid struct {
	Bid nexmark.Bid
	// Enc is the bid's q20BidCodec encoding, set by Decode, which sets
	// only the numbers of Bid: its strings are in Enc, parsed when a row is
	// asked for.
	Enc string
}

// q20BidCodec encodes a q20Bid's bid as qdBidCodec does; it decodes it
// into one string, the q20Bid's Enc (carved from a
// p1Arena block: the bids are kept for good, so an allocation per bid
// only costs the allocator and the garbage collector more), and the bid's
// numbers.
type q20BidCodec struct{}

func (q20BidCodec) AppendEncode(dst []byte, v q20Bid) []byte {
	return qdBidCodec{}.AppendEncode(dst, v.Bid)
}

func (q20BidCodec) Decode(src []byte) (q20Bid, int, error) {
	b, n, err := qdBidCodec{}.decode(src, false)
	if err != nil {
		return q20Bid{}, 0, err
	}
	return q20Bid{Bid: b, Enc: p1String(src[:n])}, n, nil
}
