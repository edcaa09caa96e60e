package codec

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/weirhq/weir/tuple"
)

type (
	ID     int64
	Name   string
	MyByte byte
	MyTime time.Time
	Flat   struct {
		A int64
		B string
		C float64
	}
	Padded struct {
		A int8
		B int64
		C bool
		D [3]uint16
	}
	Embedded struct{ E1 uint32 }
	Nested   struct {
		ID     ID
		Name   Name
		When   time.Time
		Dur    time.Duration
		Tags   []string
		Scores map[string]float32
		Next   *Flat
		Grid   [2][3]int32
		Raw    []byte
		Pairs  []tuple.T2[int64, int64]
		Opt    *[]map[int16]*Flat
		Inner  struct {
			X uint
			Y int
			Z bool
		}
		Embedded
		_       int64
		Empty   struct{}
		Stamps  []time.Time
		ByteArr [4]byte
		MyBytes []MyByte
		MT      MyTime
		Padded  [2]Padded
		Set     map[ID]struct{}
	}
)

func TestDeriveProperties(t *testing.T) {
	t.Run("flat", func(t *testing.T) { propertyTest(t, MustFor[Flat]()) })
	t.Run("padded", func(t *testing.T) { propertyTest(t, MustFor[Padded]()) })
	t.Run("nested", func(t *testing.T) { propertyTest(t, MustFor[Nested]()) })
	t.Run("slice of nested", func(t *testing.T) { propertyTest(t, MustFor[[]Nested]()) })
	t.Run("map of pointers", func(t *testing.T) { propertyTest(t, MustFor[map[Name]*Padded]()) })
	t.Run("named int", func(t *testing.T) { propertyTest(t, MustFor[ID]()) })
	t.Run("named string", func(t *testing.T) { propertyTest(t, MustFor[Name]()) })
	t.Run("pair", func(t *testing.T) { propertyTest(t, MustFor[tuple.T2[int64, int64]]()) })
	t.Run("triple", func(t *testing.T) { propertyTest(t, MustFor[tuple.T3[bool, []int8, *string]]()) })
	t.Run("array of strings", func(t *testing.T) { propertyTest(t, MustFor[[3]string]()) })
	t.Run("int slice", func(t *testing.T) { propertyTest(t, MustFor[[]int64]()) })
	t.Run("bool slice", func(t *testing.T) { propertyTest(t, MustFor[[]bool]()) })
	t.Run("pointer pointer", func(t *testing.T) { propertyTest(t, MustFor[**int8]()) })
}

// Derived codecs write the same bytes as the hand-written ones, so a job can
// switch between them without changing its format.
func TestDeriveMatchesBuiltins(t *testing.T) {
	r := newRand(t)
	for range 100 {
		f := randomValue[Flat](r)
		want := Float64().AppendEncode(String().AppendEncode(Int64().AppendEncode(nil, f.A), f.B), f.C)
		if got := MustFor[Flat]().AppendEncode(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("Flat %#v: derived %x, hand-written %x", f, got, want)
		}
		p := randomValue[Padded](r)
		want = Int8().AppendEncode(nil, p.A)
		want = Int64().AppendEncode(want, p.B)
		want = Bool().AppendEncode(want, p.C)
		for _, d := range p.D {
			want = Uint16().AppendEncode(want, d)
		}
		if got := MustFor[Padded]().AppendEncode(nil, p); !bytes.Equal(got, want) {
			t.Fatalf("Padded %#v: derived %x, hand-written %x", p, got, want)
		}
		s := randomValue[[]*tuple.T3[string, []bool, time.Time]](r)
		want = Slice(Pointer(Tuple3(String(), Slice(Bool()), Time()))).AppendEncode(nil, s)
		if got := MustFor[[]*tuple.T3[string, []bool, time.Time]]().AppendEncode(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%#v: derived %x, hand-written %x", s, got, want)
		}
		pair := randomValue[tuple.T2[int64, int64]](r)
		if got, want := MustFor[tuple.T2[int64, int64]]().AppendEncode(nil, pair), Tuple2(Int64(), Int64()).AppendEncode(nil, pair); !bytes.Equal(got, want) {
			t.Fatalf("pair: derived %x, hand-written %x", got, want)
		}
		m := randomValue[map[string]int32](r)
		got, _, err := MustFor[map[string]int32]().Decode(Map(String(), Int32()).AppendEncode(nil, m))
		if err != nil || !same(got, m) {
			t.Fatalf("map %v decoded by derived codec as %v, %v", m, got, err)
		}
	}
}

func TestForBuiltins(t *testing.T) {
	// For returns the hand-written codec for built-in types.
	if _, ok := MustFor[int64]().(int64Codec); !ok {
		t.Errorf("For[int64] is %T", MustFor[int64]())
	}
	if _, ok := MustFor[[]byte]().(bytesCodec); !ok {
		t.Errorf("For[[]byte] is %T", MustFor[[]byte]())
	}
	if _, ok := MustFor[time.Time]().(timeCodec); !ok {
		t.Errorf("For[time.Time] is %T", MustFor[time.Time]())
	}
	// Types whose memory is their encoding get the single-copy codec.
	if littleEndian {
		if _, ok := MustFor[tuple.T2[int64, int64]]().(rawCodec[tuple.T2[int64, int64]]); !ok {
			t.Errorf("For[T2[int64,int64]] is %T", MustFor[tuple.T2[int64, int64]]())
		}
		if _, ok := MustFor[[4]ID]().(rawCodec[[4]ID]); !ok {
			t.Errorf("For[[4]ID] is %T", MustFor[[4]ID]())
		}
	}
	if _, ok := MustFor[Padded]().(rawCodec[Padded]); ok {
		t.Errorf("Padded has padding and a bool; it must not be copied raw")
	}
	// Derivation happens once per type.
	if MustFor[Nested]() != MustFor[Nested]() {
		t.Errorf("For[Nested] is not cached")
	}
}

type (
	Event struct {
		ID      int64
		Handler func()
	}
	WithChan      struct{ C chan int }
	WithIface     struct{ V any }
	WithComplex   struct{ Z []complex128 }
	WithUnsafe    struct{ P unsafe.Pointer }
	WithUintptr   struct{ U uintptr }
	WithPrivate   struct{ Public, private int }
	WithMapOfFunc struct{ M map[string]func() }
	WithBadKey    struct{ M map[any]int }
	Recursive     struct {
		V    int
		Next *Recursive
	}
	RecursiveSlice []RecursiveSlice
	Deep           struct{ Inner struct{ Ptr *[2]chan bool } }
)

func TestDeriveErrors(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{second2(For[Event]()), "codec: cannot derive a codec for codec.Event.Handler (func())"},
		{second2(For[WithChan]()), "codec: cannot derive a codec for codec.WithChan.C (chan int)"},
		{second2(For[WithIface]()), "codec: cannot derive a codec for codec.WithIface.V (interface {})"},
		{second2(For[WithComplex]()), "codec: cannot derive a codec for codec.WithComplex.Z[] (complex128)"},
		{second2(For[WithUnsafe]()), "codec: cannot derive a codec for codec.WithUnsafe.P (unsafe.Pointer)"},
		{second2(For[WithUintptr]()), "codec: cannot derive a codec for codec.WithUintptr.U (uintptr)"},
		{second2(For[WithPrivate]()), "codec: cannot derive a codec for codec.WithPrivate.private (unexported field of type int)"},
		{second2(For[WithMapOfFunc]()), "codec: cannot derive a codec for codec.WithMapOfFunc.M[value] (func())"},
		{second2(For[WithBadKey]()), "codec: cannot derive a codec for codec.WithBadKey.M[key] (interface {})"},
		{second2(For[Recursive]()), "codec: cannot derive a codec for (*codec.Recursive.Next) (recursive type codec.Recursive)"},
		{second2(For[RecursiveSlice]()), "codec: cannot derive a codec for codec.RecursiveSlice[] (recursive type codec.RecursiveSlice)"},
		{second2(For[Deep]()), "codec: cannot derive a codec for (*codec.Deep.Inner.Ptr)[] (chan bool)"},
		{second2(For[any]()), "codec: cannot derive a codec for interface {} (interface {})"},
		{second2(For[complex64]()), "codec: cannot derive a codec for complex64 (complex64)"},
	}
	for _, c := range cases {
		var de *DeriveError
		if c.err == nil || c.err.Error() != c.want || !errors.As(c.err, &de) {
			t.Errorf("got error %v\nwant        %s", c.err, c.want)
		}
	}
	// Errors are cached too, and MustFor panics with them.
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("MustFor[Event] did not panic")
		}
	}()
	MustFor[Event]()
}

func second2[T any](_ T, err error) error { return err }

func TestDeriveAllocs(t *testing.T) {
	c := MustFor[Flat]()
	v := Flat{A: 1, B: "hello", C: 2.5}
	buf := c.AppendEncode(make([]byte, 0, 64), v)
	if a := testing.AllocsPerRun(100, func() { buf = c.AppendEncode(buf[:0], v) }); a != 0 {
		t.Errorf("derived encode: %.1f allocs per record, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = c.Decode(buf) }); a != 1 {
		t.Errorf("derived decode: %.1f allocs per record, want 1 (the string)", a)
	}
	pc := MustFor[tuple.T2[int64, int64]]()
	pair := tuple.Of2(int64(1), int64(2))
	buf = pc.AppendEncode(buf[:0], pair)
	if a := testing.AllocsPerRun(100, func() {
		buf = pc.AppendEncode(buf[:0], pair)
		_, _, _ = pc.Decode(buf)
	}); a != 0 {
		t.Errorf("pair: %.1f allocs per record, want 0", a)
	}
}

func TestDeriveCorruptInput(t *testing.T) {
	c := MustFor[Nested]()
	enc := c.AppendEncode(nil, Nested{Tags: []string{"a"}, Set: map[ID]struct{}{1: {}, 2: {}}})
	// Flip each byte in turn: never a panic, and a failure is a codec error.
	for i := range enc {
		b := append([]byte{}, enc...)
		b[i] ^= 0xff
		if _, _, err := c.Decode(b); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("byte %d flipped: unexpected error %v", i, err)
		}
	}
	// A huge count for a slice of wide elements fails before allocating.
	sc := MustFor[[][4]int64]()
	claim := []byte{0xff, 0xff, 0xff, 0xff, 0x03, 0}
	if a := testing.AllocsPerRun(10, func() {
		if _, _, err := sc.Decode(claim); err == nil {
			t.Fatal("corrupt count decoded")
		}
	}); a != 0 {
		t.Fatalf("corrupt count allocated %.0f times", a)
	}
}
