package codec

import (
	"testing"

	"github.com/weirhq/weir/tuple"
)

// The benchmarks mimic the network path: append records into a 32 KiB buffer
// that is reset when full, and decode records in sequence from a full one.

const benchBuf = 32 << 10

func benchEncode[T any](b *testing.B, c Codec[T], v T) {
	buf := make([]byte, 0, benchBuf+1024)
	b.ReportAllocs()
	for b.Loop() {
		if len(buf) >= benchBuf {
			buf = buf[:0]
		}
		buf = c.AppendEncode(buf, v)
	}
}

func benchDecode[T any](b *testing.B, c Codec[T], v T) {
	var buf []byte
	for len(buf) < benchBuf {
		buf = c.AppendEncode(buf, v)
	}
	b.ReportAllocs()
	src := buf
	for b.Loop() {
		if len(src) == 0 {
			src = buf
		}
		_, n, err := c.Decode(src)
		if err != nil {
			b.Fatal(err)
		}
		src = src[n:]
	}
}

var pair = tuple.Of2(int64(12345), int64(-678))

func BenchmarkEncodeInt64Pair(b *testing.B) {
	b.Run("Tuple2", func(b *testing.B) { benchEncode(b, Tuple2(Int64(), Int64()), pair) })
	b.Run("For", func(b *testing.B) { benchEncode(b, MustFor[tuple.T2[int64, int64]](), pair) })
}

func BenchmarkDecodeInt64Pair(b *testing.B) {
	b.Run("Tuple2", func(b *testing.B) { benchDecode(b, Tuple2(Int64(), Int64()), pair) })
	b.Run("For", func(b *testing.B) { benchDecode(b, MustFor[tuple.T2[int64, int64]](), pair) })
}

func BenchmarkDerivedStruct(b *testing.B) {
	flat := Flat{A: 1, B: "auction-42", C: 2.5}
	b.Run("Encode", func(b *testing.B) { benchEncode(b, MustFor[Flat](), flat) })
	b.Run("Decode", func(b *testing.B) { benchDecode(b, MustFor[Flat](), flat) })
	padded := Padded{A: 1, B: 2, C: true, D: [3]uint16{4, 5, 6}}
	b.Run("EncodePadded", func(b *testing.B) { benchEncode(b, MustFor[Padded](), padded) })
	b.Run("DecodePadded", func(b *testing.B) { benchDecode(b, MustFor[Padded](), padded) })
}

func BenchmarkString(b *testing.B) {
	s := "a typical short key, 32 bytes.."
	b.Run("Encode", func(b *testing.B) { benchEncode(b, String(), s) })
	b.Run("Decode", func(b *testing.B) { benchDecode(b, String(), s) })
}
