package query

import (
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
)

// TestQdRecBid: a bid as a record and through its codecs, one that fits
// in place and one too long for the record (its encoding then in Long and
// the record holding only the numbers), reads back as the same bid.
func TestQdRecBid(t *testing.T) {
	short := nexmark.Bid{Auction: 1001, Bidder: -2001, Price: 123456, DateTime: 1767225600123, Channel: "Google",
		URL: "https://www.nexmark.com/a/b/c/item.htm?query=1", Extra: "xyz"}
	long := short
	long.Extra = strings.Repeat("e", 300)
	for _, b := range []nexmark.Bid{short, long} {
		var r qdRecBid
		r.set(&b)
		if got := r.bid(); got != b {
			t.Fatalf("set then bid: %+v, want %+v", got, b)
		}
		if r.Rec.long() != (len(b.Extra) == 300) || r.Rec.num(24) != b.DateTime || r.Rec.num(8) != b.Bidder {
			t.Fatalf("record of %d bytes: long %v, numbers %d %d", len(b.Extra), r.Rec.long(), r.Rec.num(24), r.Rec.num(8))
		}
		enc := (qdRecBidCodec{}).AppendEncode([]byte{9}, r)
		if want := (qdBidCodec{}).AppendEncode([]byte{9}, b); string(enc) != string(want) {
			t.Fatal("qdRecBidCodec does not write qdBidCodec's bytes")
		}
		d, n, err := (qdRecBidCodec{}).Decode(append(enc[1:], 7))
		if err != nil || n != len(enc)-1 || d.bid() != b || d.Rec.n != r.Rec.n {
			t.Fatalf("decoded %d bytes of %d (%v): %+v", n, len(enc)-1, err, d.bid())
		}
		if _, _, err := (qdRecBidCodec{}).Decode(enc[1 : len(enc)-1]); err == nil {
			t.Fatal("a truncated bid decoded")
		}
		se := (qdRecCodec{}).AppendEncode(nil, r.Rec)
		rec, n, err := (qdRecCodec{}).Decode(append(se, 7))
		if err != nil || n != len(se) || rec != r.Rec {
			t.Fatalf("state record: %d bytes of %d (%v)", n, len(se), err)
		}
		if _, _, err := (qdRecCodec{}).Decode(se[:len(se)-1]); err == nil {
			t.Fatal("a truncated state record decoded")
		}
	}
	if _, _, err := (qdRecCodec{}).Decode([]byte{2}); err == nil {
		t.Fatal("a state record of kind 2 decoded")
	}
}
