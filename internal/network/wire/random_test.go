package wire

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/weirhq/weir/internal/testseed"
)

func randString(r *rand.Rand, max int) string {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

// randFrame returns a random valid frame whose data payload has at most
// maxBuf bytes.
func randFrame(r *rand.Rand, maxBuf int) frame {
	u32 := func() uint32 {
		if r.IntN(4) == 0 {
			return ^uint32(0) - uint32(r.IntN(3)) // near the top
		}
		return uint32(r.IntN(1000))
	}
	switch t := Type(1 + r.IntN(6)); t {
	case TypeHello:
		return frame{T: t, Hello: Hello{TaskManager: randString(r, MaxIDLen), Session: randString(r, 40), Epoch: r.Uint64(), BuildID: randString(r, MaxIDLen)}}
	case TypePartitionRequest:
		return frame{T: t, Req: PartitionRequest{Channel: u32(), Key: PartitionKey{Job: randString(r, MaxIDLen), Edge: int(u32()), Producer: int(u32()), Attempt: int(u32())},
			Subpartition: u32(), Credit: u32()}}
	case TypeBuffer:
		h := BufferHeader{Channel: u32(), Sequence: u32(), Backlog: u32(), Kind: uint8(r.IntN(NumKinds))}
		n := r.IntN(maxBuf + 1)
		if h.Kind != KindData {
			h.Priority = r.IntN(2) == 0
			n = r.IntN(MaxEventSize + 1)
		}
		h.Len = n
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.IntN(256))
		}
		return frame{T: t, Buf: h, Payload: p}
	case TypeAddCredit:
		c := make([]Credit, 1+r.IntN(300))
		for i := range c {
			c[i] = Credit{Channel: u32(), Credit: u32()}
		}
		return frame{T: t, Credits: c}
	case TypeCancelRequest:
		return frame{T: t, Channel: u32()}
	default:
		ch := u32()
		if r.IntN(3) == 0 {
			ch = AllChannels
		}
		return frame{T: t, Err: ErrorFrame{Channel: ch, Text: randString(r, MaxTextLen)}}
	}
}

// TestRandomRoundTrip encodes a stream of random frames, half of the
// BUFFERs through the gather list, and decodes it through small bufio
// buffers and readers that return a byte or half of what is asked at a
// time.
func TestRandomRoundTrip(t *testing.T) {
	r := testseed.Rand(t, 0)
	const maxBuf = 4096
	for round := range 20 {
		var want []frame
		var vec [][]byte
		var hdrs []byte
		for range 200 {
			f := randFrame(r, maxBuf)
			want = append(want, f)
			var err error
			if f.T == TypeBuffer && r.IntN(2) == 0 {
				vec, hdrs, err = AppendBufferVec(vec, hdrs, f.Buf, f.Payload)
			} else {
				var b []byte
				b, err = appendFrame(nil, f)
				vec = append(vec, b)
			}
			if err != nil {
				t.Fatalf("round %d: %v: %v", round, f, err)
			}
		}
		stream := bytes.Join(vec, nil)
		var src io.Reader = bytes.NewReader(stream)
		switch round % 3 {
		case 1:
			src = iotest.OneByteReader(src)
		case 2:
			src = iotest.HalfReader(src)
		}
		d, err := NewDecoder(bufio.NewReaderSize(src, 16+r.IntN(8192)), maxBuf)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			got, err := next(d, maxBuf)
			if err != nil {
				t.Fatalf("round %d, frame %d (%v): %v", round, i, w, err)
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("round %d, frame %d: decoded %v, want %v", round, i, got, w)
			}
		}
		if _, err := d.Next(); err != io.EOF {
			t.Fatalf("round %d: after the last frame: %v, want io.EOF", round, err)
		}
	}
}

// FuzzDecode: decoding never panics, every accepted frame re-encodes to
// the bytes it was decoded from, and the decoder's memory stays within
// its bounds whatever the lengths claim.
func FuzzDecode(f *testing.F) {
	var all []byte
	for _, g := range goldenFrames {
		b := enc(f, g.f)
		f.Add(b)
		all = append(all, b...)
	}
	f.Add(all)
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 3, 0, 0})
	const maxBuf = 256
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := NewDecoder(bufio.NewReaderSize(bytes.NewReader(data), 16), maxBuf)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := d.ReadHello(); err == nil {
			if b, _ := AppendHello(nil, h); !bytes.HasPrefix(data, b) {
				t.Fatalf("ReadHello accepted %+v from\n% x", h, data)
			}
		}
		d, _ = NewDecoder(bufio.NewReaderSize(bytes.NewReader(data), 16), maxBuf)
		dst := make([]byte, 0, maxBuf)
		for off := 0; ; {
			ty, err := d.Next()
			if err != nil {
				return
			}
			fr := frame{T: ty}
			switch ty {
			case TypeHello:
				fr.Hello = d.Hello()
			case TypePartitionRequest:
				fr.Req = d.PartitionRequest()
			case TypeBuffer:
				fr.Buf = d.Buffer()
				if fr.Payload, err = d.ReadPayload(dst); err != nil {
					return
				}
				if cap(fr.Payload) != maxBuf || len(fr.Payload) > maxBuf && fr.Buf.Kind == KindData || len(fr.Payload) > MaxEventSize && fr.Buf.Kind != KindData {
					t.Fatalf("a payload of %d bytes (kind %d) accepted", len(fr.Payload), fr.Buf.Kind)
				}
			case TypeAddCredit:
				fr.Credits = d.Credits().AppendTo(nil)
			case TypeCancelRequest:
				fr.Channel = d.CancelRequest()
			case TypeError:
				fr.Err = d.ErrorFrame()
			default:
				t.Fatalf("Next returned %s without an error", ty)
			}
			if cap(d.body) > creditsMax {
				t.Fatalf("the decoder holds a %d-byte body, more than the largest frame's %d", cap(d.body), creditsMax)
			}
			size := HeaderSize + int(le.Uint32(data[off:]))
			b, err := appendFrame(nil, fr)
			if err != nil {
				t.Fatalf("%v decoded but does not encode: %v", fr, err)
			}
			if !bytes.Equal(b, data[off:off+size]) {
				t.Fatalf("%v decoded from\n% x\nre-encodes to\n% x", fr, data[off:off+size], b)
			}
			off += size
		}
	})
}
