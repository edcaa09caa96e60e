package query

import (
	"encoding/binary"
	"fmt"

	"github.com/weirhq/weir"
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

func (c qdBidCodec) Decode(src []byte) (nexmark.Bid, int, error) {
	return c.decode(src, true)
}

// decode reads a bid, its strings only if strs (else only its length is
// of use).
func (qdBidCodec) decode(src []byte, strs bool) (nexmark.Bid, int, error) {
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
	if !strs {
		return b, i + int(total), nil
	}
	all := string(src[i : i+int(total)])
	a, u := int(lens[0]), int(lens[0]+lens[1])
	b.Channel, b.URL, b.Extra = all[:a], all[a:u], all[u:]
	return b, i + int(total), nil
}

// qdEncBid is a bid and, on the receiving side of an exchange, its
// qdBidCodec encoding (Enc), which the bid's strings are substrings of:
// keyed state can keep the bid as that one string (16 bytes, one pointer
// to memory without pointers) instead of a nexmark.Bid (80 bytes, three
// pointers), and a q18 or q19 state table then has small slots to move as
// it grows and little for the garbage collector to trace.
type qdEncBid struct {
	Bid nexmark.Bid
	Enc string // "" when the bid did not come through qdEncBidCodec
}

// enc returns b's encoding, made if b did not come through the codec (a
// chained edge).
func (b *qdEncBid) enc() string {
	if b.Enc == "" {
		b.Enc = string(qdBidCodec{}.AppendEncode(nil, b.Bid))
	}
	return b.Enc
}

// qdEncBids are the bids among events, to cross an exchange as qdEncBids.
func qdEncBids(events weir.DataStream[nexmark.Event]) weir.DataStream[qdEncBid] {
	return weir.FlatMap(events, func(e nexmark.Event, out weir.Collector[qdEncBid]) {
		if e.Type == nexmark.BidEvent {
			out.Collect(qdEncBid{Bid: e.Bid})
		}
	}).Name("bids").WithCodec(qdEncBidCodec{})
}

// qdEncBidCodec writes a qdEncBid's bid as qdBidCodec does; it reads it
// into one string, the Enc, and the bid's strings as substrings of it
// (one allocation, as qdBidCodec).
type qdEncBidCodec struct{}

func (qdEncBidCodec) AppendEncode(dst []byte, b qdEncBid) []byte {
	return qdBidCodec{}.AppendEncode(dst, b.Bid)
}

func (qdEncBidCodec) Decode(src []byte) (qdEncBid, int, error) {
	_, n, err := qdBidCodec{}.decode(src, false)
	if err != nil {
		return qdEncBid{}, 0, err
	}
	enc := string(src[:n])
	b, err := qdParseBid(enc)
	return qdEncBid{Bid: b, Enc: enc}, n, err
}

// qdParseBid reads a bid from its whole qdBidCodec encoding, with its
// strings as substrings of enc (no allocation).
func qdParseBid(enc string) (nexmark.Bid, error) {
	var b nexmark.Bid
	if len(enc) < 32 {
		return b, codec.ErrTruncated
	}
	b.Auction, b.Bidder, b.Price, b.DateTime = qdNum(enc, 0), qdNum(enc, 8), qdNum(enc, 16), qdNum(enc, 24)
	i := 32
	var lens [3]int
	for k := range lens {
		var l uint64
		for s := 0; ; s += 7 {
			if i >= len(enc) || s > 63 {
				return nexmark.Bid{}, codec.ErrTruncated
			}
			c := enc[i]
			i++
			l |= uint64(c&0x7f) << s
			if c < 0x80 {
				break
			}
		}
		if l > uint64(len(enc)) {
			return nexmark.Bid{}, codec.ErrTruncated
		}
		lens[k] = int(l)
	}
	if lens[0]+lens[1]+lens[2] != len(enc)-i {
		return nexmark.Bid{}, fmt.Errorf("%w: a bid's encoding of %d bytes holds strings of %d", codec.ErrCorrupt, len(enc)-i, lens[0]+lens[1]+lens[2])
	}
	b.Channel = enc[i : i+lens[0]]
	i += lens[0]
	b.URL = enc[i : i+lens[1]]
	b.Extra = enc[i+lens[1]:]
	return b, nil
}

// qdNum is the little-endian int64 at enc[i:].
func qdNum(enc string, i int) int64 {
	_ = enc[i+7]
	return int64(uint64(enc[i]) | uint64(enc[i+1])<<8 | uint64(enc[i+2])<<16 | uint64(enc[i+3])<<24 |
		uint64(enc[i+4])<<32 | uint64(enc[i+5])<<40 | uint64(enc[i+6])<<48 | uint64(enc[i+7])<<56)
}

// qdCount is COUNT(*) as a window aggregate function.
type qdCount struct{}

func (qdCount) CreateAccumulator() int64   { return 0 }
func (qdCount) Add(_ int64, n int64) int64 { return n + 1 }
func (qdCount) GetResult(n int64) int64    { return n }
func (qdCount) Merge(a, b int64) int64     { return a + b }

// qdRecCap is how many bytes of a bid's qdBidCodec encoding a qdRec holds
// in place. The generator's bids encode in 146 to 205 bytes, so every one
// fits; a longer bid (from a file) is kept elsewhere (qdRecLong).
const qdRecCap = 214

// qdRecLong is qdRec.n of a bid whose encoding is longer than qdRecCap:
// the record then holds only its 32 bytes of numbers.
const qdRecLong = 0xffff

// qdRec is a bid as its qdBidCodec encoding, in place: a value without
// pointers. Keyed state of qdRecs is a table the garbage collector never
// scans, with no object per key to mark: a ValueState of the encoding as
// a string cost an allocation per update (the new string; the old one
// garbage) and, at millions of keys, a collector that marked every
// string in turn (a cache miss each).
type qdRec struct {
	n uint16 // bytes of b in use, or qdRecLong
	b [qdRecCap]byte
}

// long says that the bid's encoding did not fit: b holds its numbers only.
func (r *qdRec) long() bool { return r.n == qdRecLong }

// num is the number at offset i of the encoding (0 auction, 8 bidder, 16
// price, 24 dateTime), which every record holds.
func (r *qdRec) num(i int) int64 { return int64(binary.LittleEndian.Uint64(r.b[i:])) }

// qdRecBid is a bid as a qdRec, with the whole encoding in Long when it
// does not fit in the record (then Rec holds its numbers).
type qdRecBid struct {
	Rec  qdRec
	Long string
}

// set makes r the bid b. It allocates only for a bid longer than
// qdRecCap.
func (r *qdRecBid) set(b *nexmark.Bid) {
	n := 32 + uvarintLen(len(b.Channel)) + uvarintLen(len(b.URL)) + uvarintLen(len(b.Extra)) + len(b.Channel) + len(b.URL) + len(b.Extra)
	if n <= qdRecCap {
		r.Long = ""
		r.Rec.n = uint16(len(qdBidCodec{}.AppendEncode(r.Rec.b[:0], *b)))
		return
	}
	r.Long = string(qdBidCodec{}.AppendEncode(make([]byte, 0, n), *b))
	r.Rec.n = qdRecLong
	copy(r.Rec.b[:32], r.Long)
}

// appendEnc appends the bid's encoding.
func (r *qdRecBid) appendEnc(dst []byte) []byte {
	if r.Rec.long() {
		return append(dst, r.Long...)
	}
	return append(dst, r.Rec.b[:r.Rec.n]...)
}

// bid decodes the bid (its strings in one new string: for result rows).
func (r *qdRecBid) bid() nexmark.Bid {
	enc := r.Long
	if !r.Rec.long() {
		enc = string(r.Rec.b[:r.Rec.n])
	}
	b, err := qdParseBid(enc)
	if err != nil {
		// Every qdRecBid was made by set or checked by its codec.
		panic(fmt.Sprintf("nexmark query: a bid record: %v", err))
	}
	return b
}

// uvarintLen is the length of binary.AppendUvarint's encoding of n >= 0.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// qdRecBidCodec writes a qdRecBid as its qdBidCodec encoding (the same
// bytes as qdBidCodec), checked on decoding as qdBidCodec checks it.
type qdRecBidCodec struct{}

func (qdRecBidCodec) AppendEncode(dst []byte, r qdRecBid) []byte { return r.appendEnc(dst) }

func (qdRecBidCodec) Decode(src []byte) (qdRecBid, int, error) {
	var r qdRecBid
	_, n, err := qdBidCodec{}.decode(src, false)
	if err != nil {
		return r, 0, err
	}
	if n <= qdRecCap {
		r.Rec.n = uint16(copy(r.Rec.b[:], src[:n]))
		return r, n, nil
	}
	r.Long = string(src[:n])
	r.Rec.n = qdRecLong
	copy(r.Rec.b[:32], src)
	return r, n, nil
}

// qdRecCodec is the codec of a qdRec in state: 0 and the encoding, or 1
// and the 32 bytes of numbers of a long one.
type qdRecCodec struct{}

func (qdRecCodec) AppendEncode(dst []byte, r qdRec) []byte {
	if r.long() {
		return append(append(dst, 1), r.b[:32]...)
	}
	return append(append(dst, 0), r.b[:r.n]...)
}

func (qdRecCodec) Decode(src []byte) (qdRec, int, error) {
	var r qdRec
	if len(src) == 0 {
		return r, 0, codec.ErrTruncated
	}
	switch src[0] {
	case 0:
		_, n, err := qdBidCodec{}.decode(src[1:], false)
		if err != nil {
			return r, 0, err
		}
		if n > qdRecCap {
			return r, 0, fmt.Errorf("%w: a bid record of %d bytes (at most %d)", codec.ErrCorrupt, n, qdRecCap)
		}
		r.n = uint16(copy(r.b[:], src[1:1+n]))
		return r, 1 + n, nil
	case 1:
		if len(src) < 33 {
			return r, 0, codec.ErrTruncated
		}
		r.n = qdRecLong
		copy(r.b[:32], src[1:33])
		return r, 33, nil
	}
	return r, 0, fmt.Errorf("%w: a bid record of kind %d", codec.ErrCorrupt, src[0])
}
