package wire

import (
	"bufio"
	"testing"
)

// repeater is an endless stream of the same bytes; it never allocates.
type repeater struct {
	b   []byte
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.b[r.off:])
		n += k
		r.off = (r.off + k) % len(r.b)
	}
	return n, nil
}

const benchBuffer = 32 << 10

// stream returns a Decoder over an endless repetition of frames and a
// destination buffer of benchBuffer bytes.
func stream(t testing.TB, frames ...frame) (*Decoder, []byte) {
	var b []byte
	for _, f := range frames {
		b = append(b, enc(t, f)...)
	}
	d, err := NewDecoder(bufio.NewReaderSize(&repeater{b: b}, 64<<10), benchBuffer)
	if err != nil {
		t.Fatal(err)
	}
	return d, make([]byte, 0, benchBuffer)
}

func dataFrame(n int) frame {
	return frame{T: TypeBuffer, Buf: BufferHeader{Channel: 3, Sequence: 1, Backlog: 2, Len: n}, Payload: make([]byte, n)}
}

// TestPerFrameAllocatesNothing: decoding a BUFFER into the caller's
// buffer, a credit batch or a cancel, and encoding BUFFER headers into a
// gather list, allocate nothing once the decoder's scratch has grown.
func TestPerFrameAllocatesNothing(t *testing.T) {
	d, dst := stream(t, dataFrame(benchBuffer), dataFrame(100), frame{T: TypeBuffer, Buf: BufferHeader{Kind: 3, Priority: true, Len: 26}, Payload: make([]byte, 26)},
		frame{T: TypeAddCredit, Credits: []Credit{{1, 2}, {3, 4}}}, frame{T: TypeCancelRequest, Channel: 1})
	sum := 0
	decodeOne := func() {
		ty, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ty {
		case TypeBuffer:
			p, err := d.ReadPayload(dst)
			if err != nil {
				t.Fatal(err)
			}
			sum += len(p)
		case TypeAddCredit:
			c := d.Credits()
			for i := range c.Len() {
				sum += int(c.At(i).Credit)
			}
		}
	}
	// One run decodes the stream's five frames: AllocsPerRun rounds its
	// average down, so a run of one frame would hide an allocation in
	// three frames out of five.
	decode := func() {
		for range 5 {
			decodeOne()
		}
	}
	decode() // warm up: bufio and the scratch body are filled once
	if n := testing.AllocsPerRun(200, decode); n != 0 {
		t.Fatalf("decoding allocates %v times per five frames", n)
	}

	payload := make([]byte, benchBuffer)
	vec, hdrs := make([][]byte, 0, 16), make([]byte, 0, 8*BufferHeaderSize)
	encode := func() {
		vec, hdrs = vec[:0], hdrs[:0]
		for i := range 8 {
			var err error
			if vec, hdrs, err = AppendBufferVec(vec, hdrs, BufferHeader{Channel: uint32(i), Sequence: uint32(i)}, payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := testing.AllocsPerRun(500, encode); n != 0 {
		t.Fatalf("encoding BUFFER headers allocates %v times per write", n)
	}
	credits := []Credit{{1, 1}, {2, 2}}
	out := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(500, func() { out, _ = AppendAddCredit(out[:0], credits) }); n != 0 {
		t.Fatalf("encoding ADD_CREDIT allocates %v times", n)
	}
}

// BenchmarkDecodeBuffer32K: one 32 KiB data BUFFER read from a bufio
// stream into the caller's buffer (the one copy a receiver makes).
func BenchmarkDecodeBuffer32K(b *testing.B) {
	d, dst := stream(b, dataFrame(benchBuffer))
	b.SetBytes(benchBuffer)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Next(); err != nil {
			b.Fatal(err)
		}
		if _, err := d.ReadPayload(dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBufferSmall: a 100-byte data BUFFER (a flushed buffer
// under a short buffer timeout): the per-frame cost without the copy.
func BenchmarkDecodeBufferSmall(b *testing.B) {
	d, dst := stream(b, dataFrame(100))
	b.SetBytes(100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Next(); err != nil {
			b.Fatal(err)
		}
		if _, err := d.ReadPayload(dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeBufferVec32K: one 32 KiB BUFFER appended to a gather
// list (header encoded, payload referenced): what the writer does per
// buffer before writev.
func BenchmarkEncodeBufferVec32K(b *testing.B) {
	payload := make([]byte, benchBuffer)
	vec, hdrs := make([][]byte, 0, 16), make([]byte, 0, 8*BufferHeaderSize)
	b.SetBytes(benchBuffer)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%8 == 0 {
			vec, hdrs = vec[:0], hdrs[:0]
		}
		var err error
		if vec, hdrs, err = AppendBufferVec(vec, hdrs, BufferHeader{Channel: uint32(i), Sequence: uint32(i)}, payload); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
