package query

import (
	"fmt"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
)

// Helpers shared by q18, q19, q12 and q13 (the qd group).

// qdBidColumns are the columns of a result table that holds whole bids
// (q18; q19 adds rank_number).
var qdBidColumns = []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra"}

// qdBidRow is a bid as a row of qdBidColumns, with room for more values.
func qdBidRow(b *nexmark.Bid, extra int) Row {
	r := make(Row, 7, 7+extra)
	r[0], r[1], r[2], r[3], r[4], r[5], r[6] = b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra
	return r
}

// qdBidCodec writes a bid as nexmark.EventCodec writes a bid event
// (varints, and on decoding the generator's own channel and URL strings, so
// a bid crossing an exchange or read from serialized state costs one
// allocation, its extra, instead of three). For the bid streams the qd
// queries key by, and their state.
type qdBidCodec struct{}

var qdEventCodec = nexmark.EventCodec()

func (qdBidCodec) AppendEncode(dst []byte, b nexmark.Bid) []byte {
	return qdEventCodec.AppendEncode(dst, nexmark.Event{Type: nexmark.BidEvent, Bid: b})
}

func (qdBidCodec) Decode(src []byte) (nexmark.Bid, int, error) {
	e, n, err := qdEventCodec.Decode(src)
	if err != nil {
		return nexmark.Bid{}, 0, err
	}
	if e.Type != nexmark.BidEvent {
		return nexmark.Bid{}, 0, fmt.Errorf("%w: a %v event where a bid was expected", codec.ErrCorrupt, e.Type)
	}
	return e.Bid, n, nil
}

// qdCount is COUNT(*) as a window aggregate function.
type qdCount struct{}

func (qdCount) CreateAccumulator() int64   { return 0 }
func (qdCount) Add(_ int64, n int64) int64 { return n + 1 }
func (qdCount) GetResult(n int64) int64    { return n }
func (qdCount) Merge(a, b int64) int64     { return a + b }
