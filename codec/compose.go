package codec

import "unsafe"

// Slice returns a codec for []E: a nil-preserving length (see the package
// doc), then each element. Element codecs from outside this package are
// assumed to encode every value to at least one byte; the decoder relies on
// that to reject a corrupt count before allocating.
func Slice[E any](elem Codec[E]) Codec[[]E] {
	return sliceCodec[E]{elem: elem, min: minSizeOf(elem)}
}

type sliceCodec[E any] struct {
	elem Codec[E]
	min  int
}

func (c sliceCodec[E]) minEncodedSize() int { return 1 }

func (c sliceCodec[E]) AppendEncode(dst []byte, v []E) []byte {
	dst = appendNilLen(dst, len(v), v == nil)
	for _, e := range v {
		dst = c.elem.AppendEncode(dst, e)
	}
	return dst
}

func (c sliceCodec[E]) Decode(src []byte) ([]E, int, error) {
	count, isNil, n, err := readNilLen(src)
	if err != nil || isNil {
		return nil, n, err
	}
	var zero E
	if err := checkCount(count, len(src)-n, c.min, unsafe.Sizeof(zero)); err != nil {
		return nil, 0, err
	}
	out := make([]E, count)
	if c.min == 0 && unsafe.Sizeof(zero) == 0 {
		// Every value of a zero-size type is the same value, and this
		// package's codecs encode it to nothing: nothing to decode.
		return out, n, nil
	}
	for i := range out {
		e, m, err := c.elem.Decode(src[n:])
		if err != nil {
			return nil, 0, err
		}
		out[i] = e
		n += m
	}
	return out, n, nil
}

// Map returns a codec for map[K]V: a nil-preserving length, then key and
// value for each entry in Go's iteration order (so encodings are not
// canonical). A repeated key in the input is ErrCorrupt.
func Map[K comparable, V any](key Codec[K], val Codec[V]) Codec[map[K]V] {
	return mapCodec[K, V]{key: key, val: val, min: minSizeOf(key) + minSizeOf(val)}
}

type mapCodec[K comparable, V any] struct {
	key Codec[K]
	val Codec[V]
	min int
}

func (c mapCodec[K, V]) minEncodedSize() int { return 1 }

func (c mapCodec[K, V]) AppendEncode(dst []byte, m map[K]V) []byte {
	dst = appendNilLen(dst, len(m), m == nil)
	for k, v := range m {
		dst = c.key.AppendEncode(dst, k)
		dst = c.val.AppendEncode(dst, v)
	}
	return dst
}

func (c mapCodec[K, V]) Decode(src []byte) (map[K]V, int, error) {
	count, isNil, n, err := readNilLen(src)
	if err != nil || isNil {
		return nil, n, err
	}
	// A map of zero-width entries holds at most one, so one is the bound.
	min := max(c.min, 1)
	if count > 1 || c.min > 0 {
		if err := checkCount(count, len(src)-n, min, 0); err != nil {
			return nil, 0, err
		}
	}
	m := make(map[K]V, count)
	for i := 0; i < count; i++ {
		k, kn, err := c.key.Decode(src[n:])
		if err != nil {
			return nil, 0, err
		}
		n += kn
		v, vn, err := c.val.Decode(src[n:])
		if err != nil {
			return nil, 0, err
		}
		n += vn
		m[k] = v
		if len(m) != i+1 {
			return nil, 0, errDuplicateKey
		}
	}
	return m, n, nil
}

// Pointer returns a codec for *E: one byte, 0 for nil, or 1 followed by the
// value. Decoding allocates a new E.
func Pointer[E any](elem Codec[E]) Codec[*E] { return pointerCodec[E]{elem: elem} }

type pointerCodec[E any] struct{ elem Codec[E] }

func (c pointerCodec[E]) minEncodedSize() int { return 1 }

func (c pointerCodec[E]) AppendEncode(dst []byte, p *E) []byte {
	if p == nil {
		return append(dst, 0)
	}
	return c.elem.AppendEncode(append(dst, 1), *p)
}

func (c pointerCodec[E]) Decode(src []byte) (*E, int, error) {
	if len(src) < 1 {
		return nil, 0, ErrTruncated
	}
	switch src[0] {
	case 0:
		return nil, 1, nil
	case 1:
	default:
		return nil, 0, errPointerFlag
	}
	e, n, err := c.elem.Decode(src[1:])
	if err != nil {
		return nil, 0, err
	}
	p := new(E)
	*p = e
	return p, n + 1, nil
}
