package query

import (
	"encoding/binary"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q16, channel statistics report: q15's statistics per channel and day,
// with the day's last minute of bids on the channel.
//
//	SELECT
//	    channel,
//	    DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	    max(DATE_FORMAT(`dateTime`, 'HH:mm')) as `minute`,
//	    count(*) AS total_bids,
//	    count(*) filter (where price < 10000) AS rank1_bids,
//	    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	    count(*) filter (where price >= 1000000) AS rank3_bids,
//	    count(distinct bidder) AS total_bidders,
//	    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//	    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//	    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//	    count(distinct auction) AS total_auctions,
//	    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//	    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//	    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//	FROM bid
//	GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// As q15 (a qeDailyAgg with the counts in a ValueState and the distinct
// bidders and auctions in a MapState, updates per bid, a group's state
// dropped at the end of its day), keyed by channel and day number. Within
// a day 'HH:mm' strings order as times do, so max(DATE_FORMAT(dateTime,
// 'HH:mm')) is the minute of the group's latest bid: the accumulator keeps
// that time, formatted only in result rows. Deviations from Flink: those
// of q15.
func init() {
	register(Query{
		Name: "q16",
		Columns: []string{"channel", "day", "minute", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
			"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
		Build: func(in *Input) error {
			bids := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[q16Bid]) {
				if e.Type == nexmark.BidEvent {
					b := &e.Bid
					out.Collect(q16Bid{Key: p1Q16Key(b.Channel, qeDay(b.DateTime)), Bid: qeBid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime}})
				}
			}).WithCodec(p1Q16BidCodec{}).Name("bid fields")
			keyed := weir.KeyBy(bids, func(b q16Bid) string { return b.Key })
			changes := qeDailyAggregate(keyed, func(k string) int64 { day, _ := p1Q16SplitKey(k); return day },
				func() qeAggregator[q16Bid, q16Acc] { return new(q16Agg) })
			EmitChanges(in, changes.Name("q16 channel counts"), func(r qeGroupRow[string, q16Acc]) Row {
				day, channel := p1Q16SplitKey(r.Key)
				row := append(make(Row, 0, 15), channel, qeDayString(day), qeMinuteString(r.Acc.Latest))
				return r.Acc.Counts.values(row)
			})
			return nil
		},
	})
}

// q16Bid is the part of a bid q16 reads: its group's key (p1Q16Key) and
// its numbers.
type q16Bid struct {
	Key string
	Bid qeBid
}

// p1Q16DayBase is a day near the generator's (2015 to 2035): the key
// holds a group's day as its distance from it.
const p1Q16DayBase = 20_000

// p1Q16Key is q16's group, a channel and a day, as a string key: the
// day's distance from p1Q16DayBase as a zigzag varint, then the channel's
// bytes. A string, not a struct, because the engine hashes a string key
// as it is, where a struct key is encoded (through the derived codec) to
// be hashed, for every bid; and short, because the heap state backend
// keeps keys of up to 15 bytes in its slots, and longer ones in a string
// of their own, one more memory access per state lookup: the generator's
// channels ("channel-9999", "Facebook") with a day of these years (2
// bytes) fit.
func p1Q16Key(channel string, day int64) string {
	var buf [binary.MaxVarintLen64 + 16]byte
	n := binary.PutVarint(buf[:], day-p1Q16DayBase)
	if len(channel) <= len(buf)-n {
		return string(append(buf[:n], channel...))
	}
	return string(buf[:n]) + channel
}

// p1Q16SplitKey returns the day and channel of a p1Q16Key.
func p1Q16SplitKey(k string) (day int64, channel string) {
	i := 0
	var ux uint64
	for shift := 0; ; shift += 7 {
		c := k[i]
		i++
		ux |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x + p1Q16DayBase, k[i:]
}

// q16Acc is a group's counts and the time of its latest bid.
type q16Acc struct {
	Counts qeRankCounts
	Latest int64
}

// q16Agg counts bids into q16's accumulators.
type q16Agg struct{ distinct qeDistinct }

func (a *q16Agg) open(st state.KeyedStore) { a.distinct.open(st) }

func (a *q16Agg) read(b q16Bid) { a.distinct.read(&b.Bid) }

func (a *q16Agg) add(acc q16Acc, b q16Bid) q16Acc {
	if acc.Counts.Bids[0] == 0 || b.Bid.DateTime > acc.Latest {
		acc.Latest = b.Bid.DateTime
	}
	a.distinct.add(&acc.Counts, &b.Bid)
	return acc
}

func (a *q16Agg) clear() { a.distinct.clear() }

// p1Q16BidCodec is the codec of q16's bids across the shuffle: the four
// numbers fixed-width, then the key's length (uvarint) and bytes. Written
// out, where the derived codec goes through a compiled function per field.
type p1Q16BidCodec struct{}

func (p1Q16BidCodec) AppendEncode(dst []byte, v q16Bid) []byte {
	b := &v.Bid
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Auction))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Bidder))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Price))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.DateTime))
	dst = binary.AppendUvarint(dst, uint64(len(v.Key)))
	return append(dst, v.Key...)
}

func (p1Q16BidCodec) Decode(src []byte) (q16Bid, int, error) {
	var v q16Bid
	if len(src) < 33 {
		return v, 0, codec.ErrTruncated
	}
	b := &v.Bid
	b.Auction = int64(binary.LittleEndian.Uint64(src))
	b.Bidder = int64(binary.LittleEndian.Uint64(src[8:]))
	b.Price = int64(binary.LittleEndian.Uint64(src[16:]))
	b.DateTime = int64(binary.LittleEndian.Uint64(src[24:]))
	l, w := binary.Uvarint(src[32:])
	if w <= 0 {
		if w == 0 {
			return q16Bid{}, 0, codec.ErrTruncated
		}
		return q16Bid{}, 0, codec.ErrCorrupt
	}
	i := 32 + w
	if l > uint64(len(src)-i) {
		return q16Bid{}, 0, codec.ErrTruncated
	}
	v.Key = string(src[i : i+int(l)])
	return v, i + int(l), nil
}
