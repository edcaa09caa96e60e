package query

import (
	"encoding/binary"

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

// qdBidCodec is the codec of the bids the qd queries key by, and of their
// state: the four numbers fixed-width, the lengths of channel, URL and
// extra, then their bytes back to back, which decode as one string that
// the three fields share: a bid crossing an exchange or read from
// serialized state costs one allocation. (nexmark.EventCodec shares the
// generator's channel and URL strings instead, at the cost of a lookup by
// their bytes, and copies an Event of 300 bytes by value each way.)
type qdBidCodec struct{}

func (qdBidCodec) AppendEncode(dst []byte, b nexmark.Bid) []byte {
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

func (qdBidCodec) Decode(src []byte) (nexmark.Bid, int, error) {
	var b nexmark.Bid
	if len(src) < 32 {
		return b, 0, codec.ErrTruncated
	}
	b.Auction = int64(binary.LittleEndian.Uint64(src))
	b.Bidder = int64(binary.LittleEndian.Uint64(src[8:]))
	b.Price = int64(binary.LittleEndian.Uint64(src[16:]))
	b.DateTime = int64(binary.LittleEndian.Uint64(src[24:]))
	i := 32
	var lens [3]uint64
	total := uint64(0)
	for k := range lens {
		n, w := binary.Uvarint(src[i:])
		if w <= 0 {
			if w == 0 {
				return nexmark.Bid{}, 0, codec.ErrTruncated
			}
			return nexmark.Bid{}, 0, codec.ErrCorrupt
		}
		i += w
		lens[k] = n
		if total += n; n > uint64(len(src)) || total > uint64(len(src)-i) {
			return nexmark.Bid{}, 0, codec.ErrTruncated
		}
	}
	all := string(src[i : i+int(total)])
	a, u := int(lens[0]), int(lens[0]+lens[1])
	b.Channel, b.URL, b.Extra = all[:a], all[a:u], all[u:]
	return b, i + int(total), nil
}

// qdCount is COUNT(*) as a window aggregate function.
type qdCount struct{}

func (qdCount) CreateAccumulator() int64   { return 0 }
func (qdCount) Add(_ int64, n int64) int64 { return n + 1 }
func (qdCount) GetResult(n int64) int64    { return n }
func (qdCount) Merge(a, b int64) int64     { return a + b }
