package nexmark

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/weirhq/weir/codec"
)

// EventCodec returns a codec for events between tasks and in state that
// writes only the part the event's type uses: the type byte, then that
// part's fields in the order of the JSON lines, numbers as varints and
// strings as a uvarint length and the bytes. A codec derived from Event
// would write all three parts, two of them empty, every time. Use it with
// DataStream.WithCodec.
func EventCodec() codec.Codec[Event] { return eventCodec{} }

// eventFormat leads the encoding of every event, so the format can change
// without misreading old state.
const eventFormat = 1

type eventCodec struct{}

func (eventCodec) AppendEncode(dst []byte, e Event) []byte {
	dst = append(dst, eventFormat, byte(e.Type))
	switch e.Type {
	case PersonEvent:
		p := &e.Person
		dst = binary.AppendVarint(dst, p.ID)
		dst = appendStr(dst, p.Name)
		dst = appendStr(dst, p.EmailAddress)
		dst = appendStr(dst, p.CreditCard)
		dst = appendStr(dst, p.City)
		dst = appendStr(dst, p.State)
		dst = binary.AppendVarint(dst, p.DateTime)
		dst = appendStr(dst, p.Extra)
	case AuctionEvent:
		a := &e.Auction
		dst = binary.AppendVarint(dst, a.ID)
		dst = appendStr(dst, a.ItemName)
		dst = appendStr(dst, a.Description)
		dst = binary.AppendVarint(dst, a.InitialBid)
		dst = binary.AppendVarint(dst, a.Reserve)
		dst = binary.AppendVarint(dst, a.DateTime)
		dst = binary.AppendVarint(dst, a.Expires)
		dst = binary.AppendVarint(dst, a.Seller)
		dst = binary.AppendVarint(dst, a.Category)
		dst = appendStr(dst, a.Extra)
	default:
		b := &e.Bid
		dst = binary.AppendVarint(dst, b.Auction)
		dst = binary.AppendVarint(dst, b.Bidder)
		dst = binary.AppendVarint(dst, b.Price)
		dst = appendStr(dst, b.Channel)
		dst = appendStr(dst, b.URL)
		dst = binary.AppendVarint(dst, b.DateTime)
		dst = appendStr(dst, b.Extra)
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func (eventCodec) Decode(src []byte) (Event, int, error) {
	if len(src) < 2 {
		return Event{}, 0, codec.ErrTruncated
	}
	if src[0] != eventFormat {
		return Event{}, 0, fmt.Errorf("%w: nexmark event format %d, want %d", codec.ErrCorrupt, src[0], eventFormat)
	}
	d := decoder{src: src, i: 2}
	var e Event
	switch EventType(src[1]) {
	case PersonEvent:
		e.Type = PersonEvent
		p := &e.Person
		p.ID = d.int()
		p.Name = d.str()
		p.EmailAddress = d.str()
		p.CreditCard = d.str()
		p.City = d.str()
		p.State = d.str()
		p.DateTime = d.int()
		p.Extra = d.str()
	case AuctionEvent:
		e.Type = AuctionEvent
		a := &e.Auction
		a.ID = d.int()
		a.ItemName = d.str()
		a.Description = d.str()
		a.InitialBid = d.int()
		a.Reserve = d.int()
		a.DateTime = d.int()
		a.Expires = d.int()
		a.Seller = d.int()
		a.Category = d.int()
		a.Extra = d.str()
	case BidEvent:
		e.Type = BidEvent
		b := &e.Bid
		b.Auction = d.int()
		b.Bidder = d.int()
		b.Price = d.int()
		b.Channel = d.internedChannel()
		b.URL = d.internedURL()
		b.DateTime = d.int()
		b.Extra = d.str()
	default:
		return Event{}, 0, fmt.Errorf("%w: nexmark event type %d", codec.ErrCorrupt, src[1])
	}
	if d.err != nil {
		return Event{}, 0, d.err
	}
	return e, d.i, nil
}

// decoder reads fields in order, keeping the first error.
type decoder struct {
	src []byte
	i   int
	err error
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.src[d.i:])
	if k <= 0 {
		d.fail(k)
		return 0
	}
	d.i += k
	return v
}

func (d *decoder) fail(k int) {
	if k == 0 {
		d.err = codec.ErrTruncated
	} else {
		d.err = fmt.Errorf("%w: varint overflows 64 bits", codec.ErrCorrupt)
	}
}

// bytes returns the next length-prefixed string's bytes, aliasing src.
func (d *decoder) bytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.src[d.i:])
	if k <= 0 {
		d.fail(k)
		return nil
	}
	d.i += k
	if n > uint64(len(d.src)-d.i) {
		d.err = codec.ErrTruncated
		return nil
	}
	b := d.src[d.i : d.i+int(n)]
	d.i += int(n)
	return b
}

// str copies the next string out of src (decoded values never alias it).
func (d *decoder) str() string { return string(d.bytes()) }

// internedChannel returns a bid's channel without allocating when it is
// one of the generator's (hot channels, "channel-K"): the same strings the
// generator made, so a bid crossing the network costs one allocation (its
// extra) instead of three.
func (d *decoder) internedChannel() string {
	b := d.bytes()
	for _, c := range hotChannels {
		if string(b) == c {
			return c
		}
	}
	t := shared()
	if k, ok := channelNumber(b); ok && string(b) == t.channels[k] {
		return t.channels[k]
	}
	return string(b)
}

// internedURL is internedChannel for the URL, through an index of the
// generator's URLs (a map lookup by the bytes does not allocate).
func (d *decoder) internedURL() string {
	b := d.bytes()
	if u, ok := urlIndex()[string(b)]; ok {
		return u
	}
	return string(b)
}

var (
	urlIndexOnce sync.Once
	urlIndexMap  map[string]string
)

// urlIndex maps each of the generator's URLs to itself, built on first use.
func urlIndex() map[string]string {
	urlIndexOnce.Do(func() {
		t := shared()
		m := make(map[string]string, len(t.hotURLs)+len(t.channelURLs))
		for _, u := range t.hotURLs {
			m[u] = u
		}
		for _, u := range t.channelURLs {
			m[u] = u
		}
		urlIndexMap = m
	})
	return urlIndexMap
}

// channelNumber parses "channel-K" for K in [0, numChannels).
func channelNumber(b []byte) (int, bool) {
	const prefix = "channel-"
	if len(b) <= len(prefix) || len(b) > len(prefix)+5 || string(b[:len(prefix)]) != prefix {
		return 0, false
	}
	k := 0
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int(c-'0')
	}
	return k, k < numChannels
}
