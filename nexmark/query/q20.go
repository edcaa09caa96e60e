package query

import (
	"encoding/binary"
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
// Bids cross the shuffle and go into state with q20BidCodec, which decodes
// a bid's three strings as one allocation: fewer objects for the garbage
// collector to trace in the ever-growing state.
func init() {
	register(Query{
		Name: "q20",
		Columns: []string{"auction", "bidder", "price", "channel", "url", "bid_dateTime", "bid_extra",
			"itemName", "description", "initialBid", "reserve", "auction_dateTime", "expires", "seller", "category", "auction_extra"},
		Build: func(in *Input) error {
			bids := weir.KeyBy(Bids(in.Events).WithCodec(q20BidCodec{}), func(b nexmark.Bid) int64 { return b.Auction })
			cat10 := weir.Filter(Auctions(in.Events), func(a nexmark.Auction) bool { return a.Category == 10 }).Name("category 10")
			auctions := weir.KeyBy(cat10, func(a nexmark.Auction) int64 { return a.ID })
			joined := weir.KeyedCoProcess(weir.ConnectKeyed(bids, auctions), weir.KeyedCoProcessFunction[int64, nexmark.Bid, nexmark.Auction, q20Row](&q20Join{}))
			Emit(in, joined.Name("q20 join"), func(r q20Row) Row {
				b, a := &r.Bid, &r.Auction
				return Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra,
					a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra}
			})
			return nil
		},
	})
}

// q20Row is a bid with its auction.
type q20Row struct {
	Bid     nexmark.Bid
	Auction nexmark.Auction
}

// q20Join is the join's keyed state and its two sides.
type q20Join struct {
	bids     state.ListState[nexmark.Bid]
	auctions state.ValueState[[]nexmark.Auction]
}

func (j *q20Join) Open(ctx weir.KeyedRuntimeContext) error {
	auctionsCodec, err := codec.For[[]nexmark.Auction]()
	if err != nil {
		return err
	}
	j.bids = state.GetListState(ctx.State(), state.ListDescriptor[nexmark.Bid]{Name: "bids", Codec: q20BidCodec{}})
	j.auctions = state.GetValueState(ctx.State(), state.ValueDescriptor[[]nexmark.Auction]{Name: "auctions", Codec: auctionsCodec})
	return nil
}

// ProcessElement1 joins a bid with the auctions so far and keeps it.
func (j *q20Join) ProcessElement1(_ weir.KeyedContext[int64], b nexmark.Bid, out weir.Collector[q20Row]) error {
	auctions, _ := j.auctions.Value()
	for i := range auctions {
		out.Collect(q20Row{Bid: b, Auction: auctions[i]})
	}
	j.bids.Add(b)
	return nil
}

// ProcessElement2 joins an auction with the bids so far and keeps it.
func (j *q20Join) ProcessElement2(_ weir.KeyedContext[int64], a nexmark.Auction, out weir.Collector[q20Row]) error {
	for _, b := range j.bids.Get() {
		out.Collect(q20Row{Bid: b, Auction: a})
	}
	auctions, _ := j.auctions.Value()
	// A new slice: the old one may be shared with a snapshot.
	j.auctions.Update(append(slices.Clip(auctions), a))
	return nil
}

// q20BidCodec encodes a bid as its four numbers (8 bytes each), the
// lengths of its channel, URL and extra (uvarints), then their bytes; it
// decodes the three strings as substrings of one.
type q20BidCodec struct{}

func (q20BidCodec) AppendEncode(dst []byte, b nexmark.Bid) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Auction))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Bidder))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Price))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.DateTime))
	dst = binary.AppendUvarint(dst, uint64(len(b.Channel)))
	dst = binary.AppendUvarint(dst, uint64(len(b.URL)))
	dst = binary.AppendUvarint(dst, uint64(len(b.Extra)))
	dst = append(dst, b.Channel...)
	dst = append(dst, b.URL...)
	return append(dst, b.Extra...)
}

func (q20BidCodec) Decode(src []byte) (b nexmark.Bid, n int, err error) {
	if len(src) < 32 {
		return b, 0, codec.ErrTruncated
	}
	b.Auction = int64(binary.LittleEndian.Uint64(src))
	b.Bidder = int64(binary.LittleEndian.Uint64(src[8:]))
	b.Price = int64(binary.LittleEndian.Uint64(src[16:]))
	b.DateTime = int64(binary.LittleEndian.Uint64(src[24:]))
	n = 32
	var lens [3]uint64
	total := uint64(0)
	for i := range lens {
		l, m := binary.Uvarint(src[n:])
		if m <= 0 || l > uint64(len(src)) {
			return b, 0, codec.ErrTruncated
		}
		lens[i], n, total = l, n+m, total+l
	}
	if total > uint64(len(src)-n) {
		return b, 0, codec.ErrTruncated
	}
	all := string(src[n : n+int(total)])
	b.Channel = all[:lens[0]]
	b.URL = all[lens[0] : lens[0]+lens[1]]
	b.Extra = all[lens[0]+lens[1]:]
	return b, n + int(total), nil
}
