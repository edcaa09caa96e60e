package codec

import (
	"unsafe"

	"github.com/weirhq/weir/tuple"
)

// Tuple2 returns a codec for tuple.T2[A, B]: F0 then F1, with no framing.
//
// When both codecs write their values' memory (fixed-width numbers) and the
// pair has no padding, the result copies the whole pair at once.
func Tuple2[A, B any](a Codec[A], b Codec[B]) Codec[tuple.T2[A, B]] {
	var v tuple.T2[A, B]
	if isRawWire(a) && isRawWire(b) && unsafe.Offsetof(v.F1) == unsafe.Sizeof(v.F0) &&
		unsafe.Sizeof(v) == unsafe.Sizeof(v.F0)+unsafe.Sizeof(v.F1) {
		return rawCodec[tuple.T2[A, B]]{}
	}
	return tuple2Codec[A, B]{a: a, b: b}
}

type tuple2Codec[A, B any] struct {
	a Codec[A]
	b Codec[B]
}

func (c tuple2Codec[A, B]) minEncodedSize() int { return minSizeOf(c.a) + minSizeOf(c.b) }

func (c tuple2Codec[A, B]) AppendEncode(dst []byte, v tuple.T2[A, B]) []byte {
	dst = c.a.AppendEncode(dst, v.F0)
	return c.b.AppendEncode(dst, v.F1)
}

func (c tuple2Codec[A, B]) Decode(src []byte) (v tuple.T2[A, B], n int, err error) {
	var m int
	if v.F0, n, err = c.a.Decode(src); err != nil {
		return tuple.T2[A, B]{}, 0, err
	}
	if v.F1, m, err = c.b.Decode(src[n:]); err != nil {
		return tuple.T2[A, B]{}, 0, err
	}
	return v, n + m, nil
}

// Tuple3 returns a codec for tuple.T3[A, B, C]: F0, F1, F2, with no framing.
// Like Tuple2, it copies whole triples of fixed-width numbers.
func Tuple3[A, B, C any](a Codec[A], b Codec[B], c Codec[C]) Codec[tuple.T3[A, B, C]] {
	var v tuple.T3[A, B, C]
	if isRawWire(a) && isRawWire(b) && isRawWire(c) &&
		unsafe.Offsetof(v.F1) == unsafe.Sizeof(v.F0) &&
		unsafe.Offsetof(v.F2) == unsafe.Offsetof(v.F1)+unsafe.Sizeof(v.F1) &&
		unsafe.Sizeof(v) == unsafe.Offsetof(v.F2)+unsafe.Sizeof(v.F2) {
		return rawCodec[tuple.T3[A, B, C]]{}
	}
	return tuple3Codec[A, B, C]{a: a, b: b, c: c}
}

type tuple3Codec[A, B, C any] struct {
	a Codec[A]
	b Codec[B]
	c Codec[C]
}

func (c tuple3Codec[A, B, C]) minEncodedSize() int {
	return minSizeOf(c.a) + minSizeOf(c.b) + minSizeOf(c.c)
}

func (c tuple3Codec[A, B, C]) AppendEncode(dst []byte, v tuple.T3[A, B, C]) []byte {
	dst = c.a.AppendEncode(dst, v.F0)
	dst = c.b.AppendEncode(dst, v.F1)
	return c.c.AppendEncode(dst, v.F2)
}

func (c tuple3Codec[A, B, C]) Decode(src []byte) (v tuple.T3[A, B, C], n int, err error) {
	var m int
	if v.F0, n, err = c.a.Decode(src); err != nil {
		return tuple.T3[A, B, C]{}, 0, err
	}
	if v.F1, m, err = c.b.Decode(src[n:]); err != nil {
		return tuple.T3[A, B, C]{}, 0, err
	}
	n += m
	if v.F2, m, err = c.c.Decode(src[n:]); err != nil {
		return tuple.T3[A, B, C]{}, 0, err
	}
	return v, n + m, nil
}
