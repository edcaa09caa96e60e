package keyedruntime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend"
)

// bigEndianInt64 is a key codec whose encoding is not the key's memory, so
// SetKey must go through the codec.
type bigEndianInt64 struct{}

func (bigEndianInt64) AppendEncode(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func (bigEndianInt64) Decode(src []byte) (int64, int, error) {
	if len(src) < 8 {
		return 0, 0, codec.ErrTruncated
	}
	return int64(binary.BigEndian.Uint64(src)), 8, nil
}

func newTestCore[K comparable](t *testing.T, kind string, c codec.Codec[K], maxP int, v keygroup.HashVersion) *Core[K] {
	t.Helper()
	rng := keygroup.Range{Start: 0, End: maxP - 1}
	be, err := statebackend.New(statebackend.Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: maxP, Range: rng})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	ctx := &operator.Context{OperatorName: "test", MaxParallelism: maxP, KeyHash: v}
	ctx.SetKeyed(&operator.KeyedState{Backend: be, Range: rng})
	core, err := NewCore(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// checkSetKey checks that SetKey's key bytes and key group are the codec's
// encoding and Flink's key group of Hasher's hash under the context's key
// hash version, whichever path it takes.
func checkSetKey[K comparable](t *testing.T, c codec.Codec[K], keys []K, wantWord bool) {
	for _, kind := range []string{statebackend.KindHashMap, statebackend.KindPebble} {
		for _, maxP := range []int{128, 100, 1 << 15} {
			for _, v := range []keygroup.HashVersion{keygroup.HashFNV, keygroup.HashWords} {
				t.Run(fmt.Sprintf("%s/maxP=%d/hash=v%d", kind, maxP, v), func(t *testing.T) { checkSetKeyIn(t, kind, maxP, v, c, keys, wantWord) })
			}
		}
	}
}

func checkSetKeyIn[K comparable](t *testing.T, kind string, maxP int, v keygroup.HashVersion, c codec.Codec[K], keys []K, wantWord bool) {
	core := newTestCore(t, kind, c, maxP, v)
	if core.word != wantWord {
		t.Fatalf("word path %v, want %v", core.word, wantWord)
	}
	if (core.heap != nil) != (kind == statebackend.KindHashMap) {
		t.Fatalf("direct heap store %v on %s", core.heap != nil, kind)
	}
	hash := Hasher[K](v)
	for _, k := range keys {
		core.SetKey(k)
		if want := c.AppendEncode(nil, k); !bytes.Equal(core.KeyBytes(), want) {
			t.Fatalf("key %v: bytes %x, want %x", k, core.KeyBytes(), want)
		}
		if want := keygroup.ForHash(hash(k), maxP); core.kg != want {
			t.Fatalf("key %v: key group %d, want %d", k, core.kg, want)
		}
		if core.Current() != k {
			t.Fatalf("current key %v, want %v", core.Current(), k)
		}
		// Word and WordGroup: the same bytes and key group, unset.
		if x, ok := core.Word(k); ok != wantWord {
			t.Fatalf("key %v: Word ok %v, want %v", k, ok, wantWord)
		} else if ok {
			if b := binary.LittleEndian.AppendUint64(nil, x); !bytes.Equal(b, core.KeyBytes()) {
				t.Fatalf("key %v: Word %x, want %x", k, b, core.KeyBytes())
			}
			if kg := core.WordGroup(x); kg != core.kg {
				t.Fatalf("key %v: WordGroup %d, want %d", k, kg, core.kg)
			}
		}
	}
}

func TestSetKeyPaths(t *testing.T) {
	ints := []int64{0, 1, -1, 42, 1 << 40, -1 << 63, 1<<63 - 1, 9_999}
	t.Run("int64", func(t *testing.T) { checkSetKey(t, codec.Int64(), ints, true) })
	t.Run("int64-big-endian", func(t *testing.T) { checkSetKey[int64](t, bigEndianInt64{}, ints, false) })
	uints := []uint64{0, 1, 1 << 63, ^uint64(0)}
	t.Run("uint64", func(t *testing.T) { checkSetKey(t, codec.Uint64(), uints, true) })
	t.Run("int", func(t *testing.T) { checkSetKey(t, codec.MustFor[int](), []int{0, -5, 1 << 50}, true) })
	t.Run("int32", func(t *testing.T) { checkSetKey(t, codec.Int32(), []int32{0, -5, 1 << 30}, false) })
	t.Run("string", func(t *testing.T) {
		checkSetKey(t, codec.String(), []string{"", "a", "a longer key of more than sixteen bytes"}, false)
	})
}

type pairKey struct{ A, B int64 }

// TestSetKeyRepeated checks that setting the current key again, which
// SetKey skips for keys whose equality is identity, leaves the key's bytes
// and group as they were, and that keys equal by == but not by encoding
// (-0 and +0) are set.
func TestSetKeyRepeated(t *testing.T) {
	pairs := []pairKey{{1, 2}, {1, 2}, {1, 3}, {1, 3}, {1, 2}, {0, 0}, {0, 0}}
	t.Run("struct", func(t *testing.T) { checkSetKey(t, codec.MustFor[pairKey](), pairs, false) })
	t.Run("string", func(t *testing.T) { checkSetKey(t, codec.String(), []string{"a", "a", "b", "b", "a"}, false) })
	t.Run("int64", func(t *testing.T) { checkSetKey(t, codec.Int64(), []int64{7, 7, 8, 7, 7}, true) })
	negZero := math.Copysign(0, -1)
	t.Run("float64", func(t *testing.T) { checkSetKey(t, codec.Float64(), []float64{0, negZero, negZero, 0, 1, 1}, false) })
	if eqIsIdentity(reflect.TypeFor[struct{ A, B float64 }]()) || eqIsIdentity(reflect.TypeFor[any]()) || eqIsIdentity(reflect.TypeFor[*int]()) {
		t.Fatal("floats, interfaces and pointers are not equal by identity")
	}
	if !eqIsIdentity(reflect.TypeFor[struct {
		S string
		N [2]uint8
		B bool
	}]()) {
		t.Fatal("strings, integer arrays and booleans are equal by identity")
	}
}

// TestHashRaw checks that a key whose memory is its encoding hashes in
// place to the hash of its encoding under each key hash version: the key
// group partitioners and state agree on (and that savepoints hold). Keys
// hashed from their encoding take the version's byte hash; integers and
// strings hash as they always did.
func TestHashRaw(t *testing.T) {
	if !RawKey[pairKey]() || RawKey[struct{ S string }]() {
		t.Fatal("RawKey: pairKey is raw, a string struct is not")
	}
	c := codec.MustFor[pairKey]()
	type arr [3]int32
	a := arr{1, -2, 3}
	type named struct {
		S string
		N int64
	}
	for _, v := range []keygroup.HashVersion{keygroup.HashFNV, keygroup.HashWords} {
		hash := Hasher[pairKey](v)
		for _, k := range []pairKey{{}, {1, 2}, {-1, 1 << 62}, {42, -7}} {
			want := v.Bytes(c.AppendEncode(nil, k))
			if got := HashRaw(&k, v); got != want {
				t.Fatalf("v%d %v: raw hash %#x, want %#x", v, k, got, want)
			}
			if got := hash(k); got != want {
				t.Fatalf("v%d %v: Hasher %#x, want %#x", v, k, got, want)
			}
		}
		if got, want := HashRaw(&a, v), v.Bytes(codec.MustFor[arr]().AppendEncode(nil, a)); got != want {
			t.Fatalf("v%d array: raw hash %#x, want %#x", v, got, want)
		}
		n := named{"bidder", 7}
		if got, want := Hasher[named](v)(n), v.Bytes(codec.MustFor[named]().AppendEncode(nil, n)); got != want {
			t.Fatalf("v%d encoded key: Hasher %#x, want %#x", v, got, want)
		}
		if got, want := Hasher[string](v)("k"), keygroup.HashString("k"); got != want {
			t.Fatalf("v%d string: Hasher %#x, want %#x", v, got, want)
		}
		if got, want := Hasher[int64](v)(-3), keygroup.HashInt64(-3); got != want {
			t.Fatalf("v%d int64: Hasher %#x, want %#x", v, got, want)
		}
	}
	if HashRaw(&a, keygroup.HashFNV) == HashRaw(&a, keygroup.HashWords) {
		t.Fatal("both versions hash the array alike")
	}
}
