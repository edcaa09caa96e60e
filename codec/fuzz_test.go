package codec

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirhq/weir/tuple"
)

// fuzzDecode asserts the decoder laws on arbitrary input: no panic; errors
// are codec errors; success uses at most the input, does not alias it, and
// re-encodes to a canonical form (no longer than what was read) that decodes
// to the same value.
func fuzzDecode[T any](t *testing.T, c Codec[T], data []byte) {
	t.Helper()
	buf := append([]byte{}, data...)
	v, n, err := c.Decode(buf)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("decode %x: error %v is neither ErrCorrupt nor ErrTruncated", data, err)
		}
		return
	}
	if n < 0 || n > len(data) {
		t.Fatalf("decode %x: used %d bytes", data, n)
	}
	for i := range buf {
		buf[i] ^= 0xff
	}
	if v0, _, _ := c.Decode(data); !same(v, v0) {
		t.Fatalf("decode %x: value aliases the input", data)
	}
	enc := c.AppendEncode(nil, v)
	if len(enc) > n {
		t.Fatalf("decode %x: re-encoding %x is longer than the %d bytes read", data, enc, n)
	}
	v2, n2, err := c.Decode(enc)
	if err != nil || n2 != len(enc) || !same(v, v2) {
		t.Fatalf("decode %x = %#v; re-encoded %x decodes to %#v (%d bytes), %v", data, v, enc, v2, n2, err)
	}
}

// seed adds encodings of random values and a few hostile inputs.
func seed[T any](f *testing.F, c Codec[T]) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(c.AppendEncode(nil, randomValue[T](r)))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x80})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
}

func FuzzFixed(f *testing.F) {
	seed(f, Int64())
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, Int64(), data)
		fuzzDecode(t, Int32(), data)
		fuzzDecode(t, Int16(), data)
		fuzzDecode(t, Int8(), data)
		fuzzDecode(t, Int(), data)
		fuzzDecode(t, Uint64(), data)
		fuzzDecode(t, Uint32(), data)
		fuzzDecode(t, Uint16(), data)
		fuzzDecode(t, Uint8(), data)
		fuzzDecode(t, Uint(), data)
		fuzzDecode(t, Float64(), data)
		fuzzDecode(t, Float32(), data)
		fuzzDecode(t, Bool(), data)
		fuzzDecode(t, Duration(), data)
	})
}

func FuzzString(f *testing.F) {
	seed(f, String())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, String(), data) })
}

func FuzzBytes(f *testing.F) {
	seed(f, Bytes())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, Bytes(), data) })
}

func FuzzTime(f *testing.F) {
	seed(f, Time())
	f.Add(Time().AppendEncode(nil, time.Unix(1<<62, 999999999)))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, Time(), data) })
}

func FuzzSlice(f *testing.F) {
	ints, strs, nested := Slice(Int32()), Slice(String()), Slice(Slice(Bool()))
	seed(f, ints)
	seed(f, nested)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, ints, data)
		fuzzDecode(t, strs, data)
		fuzzDecode(t, nested, data)
	})
}

func FuzzMap(f *testing.F) {
	byName, byFloat := Map(String(), Int64()), Map(Float64(), Bool())
	seed(f, byName)
	seed(f, byFloat)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, byName, data)
		fuzzDecode(t, byFloat, data)
	})
}

func FuzzPointer(f *testing.F) {
	pp, ps := Pointer(Pointer(Int16())), Pointer(String())
	seed(f, pp)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, pp, data)
		fuzzDecode(t, ps, data)
	})
}

func FuzzTuple(f *testing.F) {
	pair, padded := Tuple2(Int64(), Int64()), Tuple2(Int8(), Int64()) // copied whole / field by field
	triple := Tuple3(String(), Bool(), Bytes())
	seed(f, padded)
	seed(f, triple)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, pair, data)
		fuzzDecode(t, padded, data)
		fuzzDecode(t, triple, data)
	})
}

func FuzzDerived(f *testing.F) {
	nested, padded := MustFor[Nested](), MustFor[map[Name]*[]Padded]()
	pair := MustFor[tuple.T2[int64, int64]]()
	seed(f, nested)
	seed(f, padded)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, nested, data)
		fuzzDecode(t, padded, data)
		fuzzDecode(t, pair, data)
	})
}
