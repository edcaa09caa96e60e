package codec

import (
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

// golden pins the wire format: other processes and stored state depend on it.
func golden[T any](t *testing.T, c Codec[T], v T, wantHex string) {
	t.Helper()
	if got := hex.EncodeToString(c.AppendEncode(nil, v)); got != wantHex {
		t.Errorf("encode %#v = %s, want %s", v, got, wantHex)
	}
	checkRoundTrip(t, c, v)
}

func TestFixedGolden(t *testing.T) {
	golden(t, Int64(), 1, "0100000000000000")
	golden(t, Int64(), -2, "feffffffffffffff")
	golden(t, Int64(), math.MinInt64, "0000000000000080")
	golden(t, Int32(), -1, "ffffffff")
	golden(t, Int16(), 0x0102, "0201")
	golden(t, Int8(), -128, "80")
	golden(t, Int(), math.MinInt32, "00000080ffffffff")
	golden(t, Uint64(), 0x0102030405060708, "0807060504030201")
	golden(t, Uint32(), 0xdeadbeef, "efbeadde")
	golden(t, Uint16(), 0xffff, "ffff")
	golden(t, Uint8(), 7, "07")
	golden(t, Uint(), 1, "0100000000000000")
	golden(t, Float64(), 1.5, "000000000000f83f")
	golden(t, Float64(), math.Copysign(0, -1), "0000000000000080")
	golden(t, Float32(), -2, "000000c0")
	golden(t, Bool(), true, "01")
	golden(t, Bool(), false, "00")
	golden(t, Duration(), time.Second, "00ca9a3b00000000")
}

func TestFixedNaN(t *testing.T) {
	nan := math.Float64frombits(0x7ff8000000000123) // payload must survive
	got, _, err := Float64().Decode(Float64().AppendEncode(nil, nan))
	if err != nil || math.Float64bits(got) != 0x7ff8000000000123 {
		t.Fatalf("NaN payload lost: %x, %v", math.Float64bits(got), err)
	}
}

func TestFixedErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"int64 short", second(Int64().Decode(make([]byte, 7))), ErrTruncated},
		{"int32 short", second(Int32().Decode(make([]byte, 3))), ErrTruncated},
		{"int16 short", second(Int16().Decode(make([]byte, 1))), ErrTruncated},
		{"int8 empty", second(Int8().Decode(nil)), ErrTruncated},
		{"uint empty", second(Uint().Decode(nil)), ErrTruncated},
		{"float32 short", second(Float32().Decode([]byte{1})), ErrTruncated},
		{"bool empty", second(Bool().Decode(nil)), ErrTruncated},
		{"bool 2", second(Bool().Decode([]byte{2})), ErrCorrupt},
		{"bool ff", second(Bool().Decode([]byte{0xff})), ErrCorrupt},
		{"duration short", second(Duration().Decode([]byte{1, 2})), ErrTruncated},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, c.err, c.want)
		}
	}
}

func second[T any](_ T, _ int, err error) error { return err }

func TestFixedProperties(t *testing.T) {
	t.Run("int64", func(t *testing.T) { propertyTest(t, Int64()) })
	t.Run("int32", func(t *testing.T) { propertyTest(t, Int32()) })
	t.Run("int16", func(t *testing.T) { propertyTest(t, Int16()) })
	t.Run("int8", func(t *testing.T) { propertyTest(t, Int8()) })
	t.Run("int", func(t *testing.T) { propertyTest(t, Int()) })
	t.Run("uint64", func(t *testing.T) { propertyTest(t, Uint64()) })
	t.Run("uint32", func(t *testing.T) { propertyTest(t, Uint32()) })
	t.Run("uint16", func(t *testing.T) { propertyTest(t, Uint16()) })
	t.Run("uint8", func(t *testing.T) { propertyTest(t, Uint8()) })
	t.Run("uint", func(t *testing.T) { propertyTest(t, Uint()) })
	t.Run("float64", func(t *testing.T) { propertyTest(t, Float64()) })
	t.Run("float32", func(t *testing.T) { propertyTest(t, Float32()) })
	t.Run("bool", func(t *testing.T) { propertyTest(t, Bool()) })
	t.Run("duration", func(t *testing.T) { propertyTest(t, Duration()) })
}

func TestFixedAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if a := testing.AllocsPerRun(100, func() {
		buf = Int64().AppendEncode(buf[:0], 42)
		buf = Float64().AppendEncode(buf, 1.5)
		_, _, _ = Int64().Decode(buf)
		_, _, _ = Float64().Decode(buf[8:])
	}); a != 0 {
		t.Fatalf("fixed codecs allocate %.1f times per record", a)
	}
}

// int is 8 bytes on the wire everywhere; a 32-bit process rejects values it
// cannot hold rather than truncating them.
func TestIntWidth(t *testing.T) {
	b := Int64().AppendEncode(nil, 1<<40)
	_, _, err := Int().Decode(b)
	_, _, uerr := Uint().Decode(b)
	if strconv.IntSize == 32 {
		if !errors.Is(err, ErrCorrupt) || !errors.Is(uerr, ErrCorrupt) {
			t.Fatalf("32-bit int decoded 1<<40: %v, %v", err, uerr)
		}
	} else if err != nil || uerr != nil {
		t.Fatalf("64-bit int rejected 1<<40: %v, %v", err, uerr)
	}
}
