package codec_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/testseed"
)

func schemaOf[T any](t *testing.T) codec.Schema {
	t.Helper()
	s, ok := codec.SchemaOf(codec.MustFor[T]())
	if !ok {
		t.Fatalf("no schema for %s", reflect.TypeFor[T]())
	}
	return s
}

type (
	sAddr  struct{ City, Zip string }
	sAddr2 struct {
		City    string
		Country string
	}
	sBase  struct{ A, B int64 }
	sAdded struct {
		A, B int64
		C    string
	}
	sRemoved struct{ A int64 }
	sMoved   struct{ B, A int64 }
	sRenamed struct{ A, BB int64 }
	sRetyped struct {
		A int64
		B string
	}
	sWidened struct {
		A int64
		B int32
	}
	sNamed  struct{ A, B celsius }
	sNested struct {
		N  int64
		At sAddr
	}
	sNested2 struct {
		N  int64
		At sAddr2
	}
	sNestedBad struct {
		N  int64
		At int64
	}
	sSlice     struct{ Xs []sAddr }
	sSlice2    struct{ Xs []sAddr2 }
	sArr       struct{ Xs [2]int64 }
	sArr3      struct{ Xs [3]int64 }
	sMapVal    struct{ M map[string]sAddr }
	sMapVal2   struct{ M map[string]sAddr2 }
	sMapKey    struct{ M map[sBase]int64 }
	sMapKeyAdd struct{ M map[sAdded]int64 }
	sMapKeyDel struct{ M map[sRemoved]int64 }
	celsius    int64
)

// TestCompareGolden is the schema compatibility decision as a table: each
// row is an old and a new Go type, and the outcome and the field an
// incompatible change names.
func TestCompareGolden(t *testing.T) {
	rows := []struct {
		name     string
		old, new codec.Schema
		want     codec.Compatibility
		path     string // for Incompatible: the field named
	}{
		{"identical", schemaOf[sBase](t), schemaOf[sBase](t), codec.CompatibleAsIs, ""},
		{"renamed struct type", schemaOf[sBase](t), schemaOf[struct{ A, B int64 }](t), codec.CompatibleAsIs, ""},
		{"named number", schemaOf[sBase](t), schemaOf[sNamed](t), codec.CompatibleAsIs, ""},
		{"field added", schemaOf[sBase](t), schemaOf[sAdded](t), codec.CompatibleAfterMigration, ""},
		{"field removed", schemaOf[sBase](t), schemaOf[sRemoved](t), codec.CompatibleAfterMigration, ""},
		{"fields reordered", schemaOf[sBase](t), schemaOf[sMoved](t), codec.CompatibleAfterMigration, ""},
		{"field renamed", schemaOf[sBase](t), schemaOf[sRenamed](t), codec.CompatibleAfterMigration, ""},
		{"field type changed", schemaOf[sBase](t), schemaOf[sRetyped](t), codec.Incompatible, "codec_test.sRetyped.B"},
		{"field narrowed", schemaOf[sBase](t), schemaOf[sWidened](t), codec.Incompatible, "codec_test.sWidened.B"},
		{"nested field renamed", schemaOf[sNested](t), schemaOf[sNested2](t), codec.CompatibleAfterMigration, ""},
		{"nested struct became int", schemaOf[sNested](t), schemaOf[sNestedBad](t), codec.Incompatible, "codec_test.sNestedBad.At"},
		{"slice element migrated", schemaOf[sSlice](t), schemaOf[sSlice2](t), codec.CompatibleAfterMigration, ""},
		{"array length changed", schemaOf[sArr](t), schemaOf[sArr3](t), codec.Incompatible, "codec_test.sArr3.Xs"},
		{"map value migrated", schemaOf[sMapVal](t), schemaOf[sMapVal2](t), codec.CompatibleAfterMigration, ""},
		{"map key gains field", schemaOf[sMapKey](t), schemaOf[sMapKeyAdd](t), codec.CompatibleAfterMigration, ""},
		{"map key loses field", schemaOf[sMapKey](t), schemaOf[sMapKeyDel](t), codec.Incompatible, "codec_test.sMapKeyDel.M[key].B"},
		{"int64 to string", schemaOf[int64](t), schemaOf[string](t), codec.Incompatible, "value"},
		{"int64 to time.Duration", schemaOf[int64](t), schemaOf[time.Duration](t), codec.CompatibleAsIs, ""},
		{"struct to pointer", schemaOf[sBase](t), schemaOf[*sBase](t), codec.Incompatible, "codec_test.sBase"},
		{"declared equal",
			declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 1}),
			declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 1}), codec.CompatibleAsIs, ""},
		{"declared version changed",
			declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 1}),
			declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 2}), codec.Incompatible, "x.T@v2"},
		{"derived to declared", schemaOf[sBase](t),
			declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 1}), codec.Incompatible, "x.T@v1"},
	}
	for _, r := range rows {
		got, err := codec.Compare(r.old, r.new)
		if got != r.want {
			t.Errorf("%s: %v (%v), want %v", r.name, got, err, r.want)
			continue
		}
		var ce *codec.SchemaChangeError
		switch {
		case r.want != codec.Incompatible && err != nil:
			t.Errorf("%s: unexpected error %v", r.name, err)
		case r.want == codec.Incompatible && (!errors.As(err, &ce) || ce.Path != r.path):
			t.Errorf("%s: error %v, want one naming %q", r.name, err, r.path)
		}
	}
}

// declared returns s as a codec's declared schema would arrive (through
// SchemaOf of a SchemaDeclarer).
func declared(s codec.Schema) codec.Schema {
	got, _ := codec.SchemaOf[int](declaringCodec{codec.Int(), s})
	return got
}

type declaringCodec struct {
	codec.Codec[int]
	s codec.Schema
}

func (d declaringCodec) Schema() codec.Schema { return d.s }

func TestSchemaBinaryRoundTrip(t *testing.T) {
	for _, s := range []codec.Schema{
		schemaOf[sNested](t), schemaOf[sMapKey](t), schemaOf[sArr](t), schemaOf[*[]map[string]time.Time](t),
		declared(codec.Schema{Kind: codec.SchemaOpaque, Type: "x.T", Version: 7}),
	} {
		b := s.AppendBinary(nil)
		got, err := codec.ParseSchema(b)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("%s: parsed %s (declared %v), %v", s, got, got.Declared(), err)
		}
		for i := range b { // every truncation is an error, never a panic
			if _, err := codec.ParseSchema(b[:i]); err == nil {
				t.Fatalf("%s: truncated to %d bytes parses", s, i)
			}
		}
	}
	if got := schemaOf[sNested](t).String(); got != "codec_test.sNested{N int64; At codec_test.sAddr{City string; Zip string}}" {
		t.Fatalf("String: %s", got)
	}
}

// SchemaOf knows derived and basic codecs, not compositions from elsewhere.
func TestSchemaOfWhichCodecs(t *testing.T) {
	if _, ok := codec.SchemaOf(codec.Int64()); !ok {
		t.Fatal("Int64 has no schema")
	}
	if _, ok := codec.SchemaOf(codec.Slice(codec.Int64())); ok {
		t.Fatal("a composition has a schema")
	}
	if s, ok := codec.SchemaOf(codec.MustFor[celsius]()); !ok || s.Kind != codec.SchemaInt64 {
		t.Fatalf("named number: %v %v", s, ok)
	}
}

type (
	evOld struct {
		ID    int64
		Name  string
		Gone  []string
		Score float64
		At    time.Time
		Tags  map[string]sAddr
		P     *sAddr
	}
	evNew struct {
		Score float64
		Added []int32
		ID    int64
		Tags  map[string]sAddr2
		P     *sAddr2
		At    time.Time
		Name  string
		Extra sAddr
	}
)

// TestTranscoderRandom migrates random values of evOld to evNew's schema
// and checks each against a field-by-field conversion written out by hand.
func TestTranscoderRandom(t *testing.T) {
	r := testseed.Rand(t, 1)
	tc, err := codec.Transcoder(schemaOf[evOld](t), schemaOf[evNew](t))
	if err != nil {
		t.Fatal(err)
	}
	cOld, cNew := codec.MustFor[evOld](), codec.MustFor[evNew]()
	for range 500 {
		v := randomOld(r)
		out, err := tc(nil, cOld.AppendEncode(nil, v))
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := cNew.Decode(out)
		if err != nil || n != len(out) {
			t.Fatalf("decoding the migrated bytes: %v (%d of %d bytes)", err, n, len(out))
		}
		if want := convert(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("migrated %+v\n to %+v\nwant %+v", v, got, want)
		}
	}
	// Corrupt input is an error, not a panic.
	b := cOld.AppendEncode(nil, randomOld(r))
	for i := range b {
		if _, err := tc(nil, b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes migrates", i)
		}
	}
}

func randomOld(r *rand.Rand) evOld {
	str := func() string { return strings.Repeat("x", r.IntN(4)) + string(rune('a'+r.IntN(26))) }
	v := evOld{ID: r.Int64(), Name: str(), Score: r.Float64(), At: time.Unix(r.Int64N(1<<40), r.Int64N(1e9)).UTC()}
	for range r.IntN(3) {
		v.Gone = append(v.Gone, str())
	}
	if r.IntN(2) == 0 {
		v.Tags = map[string]sAddr{}
		for range r.IntN(3) {
			v.Tags[str()] = sAddr{City: str(), Zip: str()}
		}
	}
	if r.IntN(2) == 0 {
		v.P = &sAddr{City: str(), Zip: str()}
	}
	return v
}

func convert(v evOld) evNew {
	out := evNew{Score: v.Score, ID: v.ID, At: v.At, Name: v.Name}
	if v.Tags != nil {
		out.Tags = map[string]sAddr2{}
		for k, a := range v.Tags {
			out.Tags[k] = sAddr2{City: a.City}
		}
	}
	if v.P != nil {
		out.P = &sAddr2{City: v.P.City}
	}
	return out
}

func TestTranscoderRefusesTypeChange(t *testing.T) {
	_, err := codec.Transcoder(schemaOf[sBase](t), schemaOf[sRetyped](t))
	var ce *codec.SchemaChangeError
	if !errors.As(err, &ce) || ce.Path != "codec_test.sRetyped.B" || ce.Old != "int64" || ce.New != "string" {
		t.Fatalf("got %v", err)
	}
}

// Parsing any bytes as a schema, and migrating any bytes between two
// schemas, returns an error or a result, never a panic; what parses
// re-encodes to itself.
func FuzzSchema(f *testing.F) {
	f.Add(codec.MustFor[int64]().AppendEncode(nil, 1), codec.Schema{}.AppendBinary(nil))
	for _, s := range []codec.Schema{mustSchema[evOld](), mustSchema[sMapKey](), mustSchema[sArr]()} {
		f.Add(codec.MustFor[evOld]().AppendEncode(nil, evOld{ID: 3, Name: "x", Gone: []string{"a"}}), s.AppendBinary(nil))
	}
	tc, err := codec.Transcoder(mustSchema[evOld](), mustSchema[evNew]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data, schema []byte) {
		if s, err := codec.ParseSchema(schema); err == nil {
			again, err := codec.ParseSchema(s.AppendBinary(nil))
			if err != nil || !reflect.DeepEqual(again, s) {
				t.Fatalf("%s re-parses as %s (%v)", s, again, err)
			}
			if mig, err := codec.Transcoder(s, s); err == nil {
				mig(nil, data)
			}
		}
		tc(nil, data)
	})
}

func mustSchema[T any]() codec.Schema {
	s, _ := codec.SchemaOf(codec.MustFor[T]())
	return s
}
