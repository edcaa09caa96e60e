package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// newRand returns a generator seeded by internal/testseed (WEIR_SEED
// replays a failure).
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	return testseed.Rand(t, 0x9e3779b97f4a7c15)
}

// same is equality for decoded values: floats compare by bits (NaN equals
// itself), times by instant, and nil differs from empty.
func same(a, b any) bool { return sameValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func sameValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	t := a.Type()
	if t.Kind() == reflect.Struct && t.ConvertibleTo(timeType) {
		return a.Convert(timeType).Interface().(time.Time).Equal(b.Convert(timeType).Interface().(time.Time))
	}
	switch t.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == b.Uint()
	case reflect.Float32:
		return math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float()))
	case reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.String:
		return a.String() == b.String()
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			k := it.Key()
			if !k.Equal(k) {
				continue // a NaN key cannot be looked up
			}
			bv := b.MapIndex(k)
			if !bv.IsValid() || !sameValue(it.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).Name == "_" {
				continue
			}
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	panic("same: unsupported kind " + t.String())
}

// randomValue returns a random T, biased towards edge cases.
func randomValue[T any](r *rand.Rand) T {
	var v T
	fill(r, reflect.ValueOf(&v).Elem(), 0)
	return v
}

func fill(r *rand.Rand, v reflect.Value, depth int) {
	t := v.Type()
	if t.Kind() == reflect.Struct && t.ConvertibleTo(timeType) {
		var tm time.Time // zero time one time in eight
		if r.IntN(8) != 0 {
			tm = time.Unix(r.Int64N(2e11)-1e11, r.Int64N(1e9)).UTC()
		}
		v.Set(reflect.ValueOf(tm).Convert(t))
		return
	}
	deep := depth > 4
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		edges := []int64{0, 1, -1, math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32}
		if r.IntN(3) == 0 {
			v.SetInt(edges[r.IntN(len(edges))])
		} else {
			v.SetInt(int64(r.Uint64()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if r.IntN(3) == 0 {
			v.SetUint([]uint64{0, 1, math.MaxUint64, math.MaxUint32}[r.IntN(4)])
		} else {
			v.SetUint(r.Uint64())
		}
	case reflect.Float32, reflect.Float64:
		edges := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}
		if r.IntN(3) == 0 {
			v.SetFloat(edges[r.IntN(len(edges))])
		} else {
			v.SetFloat(r.NormFloat64() * 1e6)
		}
	case reflect.String:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32()) // includes invalid UTF-8
		}
		v.SetString(string(b))
	case reflect.Slice:
		if deep || r.IntN(5) == 0 {
			return // nil
		}
		n := r.IntN(6)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		if deep || r.IntN(5) == 0 {
			return
		}
		m := reflect.MakeMap(t)
		for range r.IntN(5) {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			fill(r, k, depth+1)
			fill(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if deep || r.IntN(3) == 0 {
			return
		}
		p := reflect.New(t.Elem())
		fill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	default:
		panic("fill: unsupported kind " + t.String())
	}
}

// checkRoundTrip asserts the codec laws on one value: it decodes to the same
// value, consuming exactly its encoding and no more; every strict prefix is
// an error; and the result does not alias the input.
func checkRoundTrip[T any](t testing.TB, c Codec[T], v T) {
	t.Helper()
	enc := c.AppendEncode(nil, v)
	withTail := append(append([]byte{}, enc...), 0xff, 0x01, 0x80)
	got, n, err := c.Decode(withTail)
	if err != nil {
		t.Fatalf("decode %x (value %#v): %v", enc, v, err)
	}
	if n != len(enc) {
		t.Fatalf("decode used %d bytes of a %d-byte encoding (value %#v)", n, len(enc), v)
	}
	if !same(v, got) {
		t.Fatalf("round trip changed %#v into %#v", v, got)
	}
	for i := range withTail {
		withTail[i] = ^withTail[i] // scribble: the decoded value must not alias it
	}
	if !same(v, got) {
		t.Fatalf("decoded value aliases the input: %#v became %#v", v, got)
	}
	if c2 := c.AppendEncode([]byte("prefix"), v); !bytes.Equal(c2[6:], enc) && !hasMap(reflect.TypeOf(v)) {
		t.Fatalf("AppendEncode depends on dst: %x vs %x", c2[6:], enc)
	}
	for i := range len(enc) {
		if _, _, err := c.Decode(enc[:i:i]); err == nil {
			t.Fatalf("decoding the %d-byte prefix of %x (value %#v) succeeded", i, enc, v)
		}
	}
}

// checkSequence asserts that concatenated encodings decode in order.
func checkSequence[T any](t testing.TB, c Codec[T], vs []T) {
	t.Helper()
	var buf []byte
	for _, v := range vs {
		buf = c.AppendEncode(buf, v)
	}
	for i, v := range vs {
		got, n, err := c.Decode(buf)
		if err != nil || !same(v, got) {
			t.Fatalf("value %d of %d: got %#v, %v; want %#v", i, len(vs), got, err, v)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left after decoding the sequence", len(buf))
	}
}

// propertyTest checks the laws on many random values of T.
func propertyTest[T any](t *testing.T, c Codec[T]) {
	t.Helper()
	r := newRand(t)
	vs := make([]T, 200)
	for i := range vs {
		vs[i] = randomValue[T](r)
		checkRoundTrip(t, c, vs[i])
	}
	checkSequence(t, c, vs)
}

func hasMap(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map:
		return true
	case reflect.Slice, reflect.Array, reflect.Pointer:
		return hasMap(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasMap(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
