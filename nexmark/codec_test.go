package nexmark

import (
	"bytes"
	"errors"
	"testing"

	"github.com/weirhq/weir/codec"
)

// TestEventCodecRoundTrip encodes generated events (and odd ones) and
// decodes them back, also from every truncated prefix.
func TestEventCodecRoundTrip(t *testing.T) {
	g := mustGenerator(t, DefaultConfig())
	c := EventCodec()
	var events []Event
	for n := range int64(3000) {
		var e Event
		g.Event(n, &e)
		events = append(events, e)
	}
	events = append(events,
		Event{Type: BidEvent, Bid: Bid{Auction: -1, Bidder: 1 << 62, Channel: "channel-99999", URL: "x", Extra: "\x00\xff"}},
		Event{Type: BidEvent, Bid: Bid{Channel: "channel-12", URL: "https://www.nexmark.com/"}},
		Event{Type: PersonEvent},
		Event{Type: AuctionEvent, Auction: Auction{Expires: -5, ItemName: "é"}})
	var buf []byte
	for i, e := range events {
		buf = c.AppendEncode(buf[:0], e)
		got, n, err := c.Decode(buf)
		if err != nil || n != len(buf) || got != e {
			t.Fatalf("event %d: decoded %+v, %d of %d bytes, %v; want %+v", i, got, n, len(buf), err, e)
		}
		for k := range len(buf) {
			if _, _, err := c.Decode(buf[:k]); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("event %d from %d of %d bytes: %v, want ErrTruncated", i, k, len(buf), err)
			}
		}
	}
	// Decoded strings do not alias the input.
	buf = c.AppendEncode(buf[:0], Event{Type: BidEvent, Bid: Bid{Channel: "c", URL: "u", Extra: "extra"}})
	got, _, _ := c.Decode(buf)
	for i := range buf {
		buf[i] = 'X'
	}
	if got.Bid.Channel != "c" || got.Bid.URL != "u" || got.Bid.Extra != "extra" {
		t.Fatalf("decoded strings changed with the input: %+v", got.Bid)
	}
	if _, _, err := c.Decode([]byte{eventFormat, 7, 0}); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("type 7: %v", err)
	}
	if _, _, err := c.Decode([]byte{9, 0}); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("format 9: %v", err)
	}
}

// TestEventCodecSmaller checks what the codec is for: a bid takes fewer
// bytes than with the codec derived from Event.
func TestEventCodecSmaller(t *testing.T) {
	g := mustGenerator(t, DefaultConfig())
	var e Event
	g.Event(10, &e)
	derived := codec.MustFor[Event]().AppendEncode(nil, e)
	ours := EventCodec().AppendEncode(nil, e)
	if len(ours) >= len(derived) || bytes.Equal(ours, derived) {
		t.Errorf("a bid: %d bytes with EventCodec, %d derived", len(ours), len(derived))
	}
	t.Logf("a bid: %d bytes with EventCodec, %d derived", len(ours), len(derived))
}

// FuzzEventCodec decodes arbitrary bytes: an error or an event that
// encodes back to the bytes it was decoded from.
func FuzzEventCodec(f *testing.F) {
	g := mustGenerator(f, DefaultConfig())
	var e Event
	for n := range int64(60) {
		g.Event(n, &e)
		f.Add(EventCodec().AppendEncode(nil, e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := EventCodec().Decode(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("used %d of %d bytes", n, len(b))
		}
		again, m, err := EventCodec().Decode(EventCodec().AppendEncode(nil, e))
		if err != nil || again != e || m == 0 {
			t.Fatalf("%+v does not survive a round trip: %+v, %v", e, again, err)
		}
	})
}

func BenchmarkEventCodec(b *testing.B) {
	g := mustGenerator(b, DefaultConfig())
	events := make([]Event, 1000)
	for i := range events {
		g.Event(int64(i), &events[i])
	}
	for _, c := range []struct {
		name string
		c    codec.Codec[Event]
	}{{"EventCodec", EventCodec()}, {"derived", codec.MustFor[Event]()}} {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf = c.c.AppendEncode(buf[:0], events[i%len(events)])
				if _, _, err := c.c.Decode(buf); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
