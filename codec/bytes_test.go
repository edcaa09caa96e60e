package codec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBytesGolden(t *testing.T) {
	golden(t, String(), "", "00")
	golden(t, String(), "ab", "026162")
	golden(t, String(), strings.Repeat("x", 200), "c801"+strings.Repeat("78", 200))
	golden(t, Bytes(), nil, "00")
	golden(t, Bytes(), []byte{}, "01")
	golden(t, Bytes(), []byte{9, 8}, "030908")
}

func TestBytesErrors(t *testing.T) {
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01} // 2^64-1
	over := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"string empty", second(String().Decode(nil)), ErrTruncated},
		{"string short", second(String().Decode([]byte{3, 'a', 'b'})), ErrTruncated},
		{"string varint cut", second(String().Decode([]byte{0x80})), ErrTruncated},
		{"string huge length", second(String().Decode(huge)), ErrCorrupt},
		{"string varint overflow", second(String().Decode(over)), ErrCorrupt},
		{"string length just past input", second(String().Decode([]byte{0x80, 0x80, 0x01})), ErrTruncated},
		{"bytes empty", second(Bytes().Decode(nil)), ErrTruncated},
		{"bytes short", second(Bytes().Decode([]byte{3, 1})), ErrTruncated},
		{"bytes huge length", second(Bytes().Decode(huge)), ErrCorrupt},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, c.err, c.want)
		}
	}
	// A corrupt length must not allocate for the length it claims.
	claim := []byte{0x80, 0x80, 0x80, 0x80, 0x02} // 512 MiB, within MaxLen
	if a := testing.AllocsPerRun(10, func() { _, _, _ = String().Decode(claim); _, _, _ = Bytes().Decode(claim) }); a != 0 {
		t.Fatalf("corrupt length allocated %.0f times", a)
	}
}

func TestBytesProperties(t *testing.T) {
	t.Run("string", func(t *testing.T) { propertyTest(t, String()) })
	t.Run("bytes", func(t *testing.T) { propertyTest(t, Bytes()) })
	t.Run("time", func(t *testing.T) { propertyTest(t, Time()) })
}

func TestTime(t *testing.T) {
	golden(t, Time(), time.Time{}, "00096e88f1ffffff00000000")
	golden(t, Time(), time.Unix(1, 5).UTC(), "010000000000000005000000")
	// A local time with a monotonic reading decodes to the same instant in UTC.
	now := time.Now()
	got, _, err := Time().Decode(Time().AppendEncode(nil, now))
	if err != nil || !got.Equal(now) || got.Location() != time.UTC {
		t.Fatalf("Time round trip of %v = %v (%v), %v", now, got, got.Location(), err)
	}
	zero, _, _ := Time().Decode(Time().AppendEncode(nil, time.Time{}))
	if !zero.IsZero() || zero != (time.Time{}) {
		t.Fatalf("zero time decoded as %v", zero)
	}
	bad := Time().AppendEncode(nil, time.Unix(0, 0))
	bad[8], bad[9], bad[10], bad[11] = 0x00, 0xca, 0x9a, 0x3b // 1e9 ns
	if _, _, err := Time().Decode(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("nanoseconds of 1e9 decoded: %v", err)
	}
}
