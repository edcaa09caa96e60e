package codec

import (
	"errors"
	"math"
	"testing"

	"github.com/weirhq/weir/tuple"
)

func TestComposeGolden(t *testing.T) {
	golden(t, Slice(Int16()), nil, "00")
	golden(t, Slice(Int16()), []int16{}, "01")
	golden(t, Slice(Int16()), []int16{1, -1}, "030100ffff")
	golden(t, Slice(String()), []string{"a", ""}, "03016100")
	golden(t, Map(String(), Int8()), nil, "00")
	golden(t, Map(String(), Int8()), map[string]int8{}, "01")
	golden(t, Map(String(), Int8()), map[string]int8{"k": 3}, "02016b03")
	golden(t, Pointer(Int32()), nil, "00")
	golden(t, Pointer(Int32()), new(int32(7)), "0107000000")
	golden(t, Tuple2(Int64(), Bool()), tuple.Of2(int64(1), true), "010000000000000001")
	golden(t, Tuple2(Int64(), Int64()), tuple.Of2(int64(1), int64(-1)), "0100000000000000ffffffffffffffff")
	golden(t, Tuple2(Int8(), Int64()), tuple.Of2(int8(1), int64(2)), "010200000000000000")
	golden(t, Tuple3(Int64(), Float64(), Uint64()), tuple.Of3(int64(1), 0.0, uint64(2)), "010000000000000000000000000000000200000000000000")
	golden(t, Tuple3(Int8(), String(), Uint16()), tuple.Of3(int8(-1), "x", uint16(2)), "ff01780200")
}

func TestComposeErrors(t *testing.T) {
	manyInts := []byte{0xff, 0xff, 0xff, 0xff, 0x03, 1, 2, 3} // count 1 Gi - 1
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"slice empty", second(Slice(Int64()).Decode(nil)), ErrTruncated},
		{"slice count beyond input", second(Slice(Int64()).Decode(manyInts)), ErrTruncated},
		{"slice count beyond MaxLen", second(Slice(Int8()).Decode([]byte{0x82, 0x80, 0x80, 0x80, 0x04})), ErrCorrupt},
		{"slice element cut", second(Slice(Int16()).Decode([]byte{2, 1})), ErrTruncated},
		{"slice bad element", second(Slice(Bool()).Decode([]byte{2, 7})), ErrCorrupt},
		{"map count beyond input", second(Map(Int8(), Int8()).Decode(manyInts)), ErrTruncated},
		{"map duplicate key", second(Map(Int8(), Int8()).Decode([]byte{3, 1, 0, 1, 0})), ErrCorrupt},
		{"map value cut", second(Map(Int8(), Int16()).Decode([]byte{2, 1, 0})), ErrTruncated},
		{"pointer empty", second(Pointer(Int8()).Decode(nil)), ErrTruncated},
		{"pointer flag 2", second(Pointer(Int8()).Decode([]byte{2, 0})), ErrCorrupt},
		{"pointer value cut", second(Pointer(Int16()).Decode([]byte{1, 0})), ErrTruncated},
		{"tuple2 second cut", second(Tuple2(Int8(), Int16()).Decode([]byte{1, 0})), ErrTruncated},
		{"tuple3 third cut", second(Tuple3(Int8(), Int8(), Int16()).Decode([]byte{1, 0, 0})), ErrTruncated},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, c.err, c.want)
		}
	}
	// A corrupt count must fail before allocating for it.
	sc, mc := Slice(Int64()), Map(Int8(), Int8())
	if a := testing.AllocsPerRun(10, func() {
		_, _, _ = sc.Decode(manyInts)
		_, _, _ = mc.Decode(manyInts)
	}); a != 0 {
		t.Fatalf("corrupt count allocated %.0f times", a)
	}
}

func TestComposeZeroWidth(t *testing.T) {
	// Elements that encode to nothing cannot be bounded by the input left.
	c := Slice(MustFor[struct{}]())
	got, n, err := c.Decode([]byte{0x81, 0x80, 0x80, 0x80, 0x04}) // 1 Gi elements
	if err != nil || len(got) != 1<<30 || n != 5 {
		t.Fatalf("zero-size slice: len %d, n %d, %v", len(got), n, err)
	}
	m := Map(MustFor[struct{}](), MustFor[struct{}]())
	if _, _, err := m.Decode([]byte{3}); err == nil {
		t.Fatalf("two zero-width map entries must be a duplicate")
	}
	checkRoundTrip(t, m, map[struct{}]struct{}{{}: {}})
}

func TestNaNMapKeys(t *testing.T) {
	m := map[float64]int8{math.NaN(): 1, math.NaN(): 2, 0: 3}
	got, _, err := Map(Float64(), Int8()).Decode(Map(Float64(), Int8()).AppendEncode(nil, m))
	if err != nil || len(got) != 3 {
		t.Fatalf("NaN keys: %v, %v", got, err)
	}
}

func TestComposeProperties(t *testing.T) {
	t.Run("slice", func(t *testing.T) { propertyTest(t, Slice(Int32())) })
	t.Run("slice of slices", func(t *testing.T) { propertyTest(t, Slice(Slice(String()))) })
	t.Run("map", func(t *testing.T) { propertyTest(t, Map(String(), Float64())) })
	t.Run("map of slices", func(t *testing.T) { propertyTest(t, Map(Int16(), Slice(Bool()))) })
	t.Run("pointer", func(t *testing.T) { propertyTest(t, Pointer(Time())) })
	t.Run("pointer to map", func(t *testing.T) { propertyTest(t, Pointer(Map(Uint8(), Bytes()))) })
	t.Run("tuple2", func(t *testing.T) { propertyTest(t, Tuple2(Int64(), Int64())) })
	t.Run("tuple3", func(t *testing.T) { propertyTest(t, Tuple3(String(), Float32(), Slice(Uint64()))) })
}

// A codec from outside the package: compositions must work through the
// interface alone.
type upperCodec struct{}

func (upperCodec) AppendEncode(dst []byte, v rune) []byte { return Int32().AppendEncode(dst, v) }
func (upperCodec) Decode(src []byte) (rune, int, error)   { return Int32().Decode(src) }

func TestForeignElement(t *testing.T) {
	propertyTest(t, Slice[rune](upperCodec{}))
}
