package keyed

import (
	"bytes"
	"encoding/binary"
	"fmt"
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

func newTestCore[K comparable](t *testing.T, kind string, c codec.Codec[K], maxP int) *Core[K] {
	t.Helper()
	rng := keygroup.Range{Start: 0, End: maxP - 1}
	be, err := statebackend.New(statebackend.Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: maxP, Range: rng})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	ctx := &operator.Context{OperatorName: "test", MaxParallelism: maxP}
	ctx.SetKeyed(&operator.KeyedState{Backend: be, Range: rng})
	core, err := NewCore(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// checkSetKey checks that SetKey's key bytes and key group are the codec's
// encoding and Flink's key group of Hasher's hash, whichever path it takes.
func checkSetKey[K comparable](t *testing.T, c codec.Codec[K], keys []K, wantWord bool) {
	for _, kind := range []string{statebackend.KindHashMap, statebackend.KindPebble} {
		for _, maxP := range []int{128, 100, 1 << 15} {
			t.Run(fmt.Sprintf("%s/maxP=%d", kind, maxP), func(t *testing.T) {
				core := newTestCore(t, kind, c, maxP)
				if core.word != wantWord {
					t.Fatalf("word path %v, want %v", core.word, wantWord)
				}
				if (core.heap != nil) != (kind == statebackend.KindHashMap) {
					t.Fatalf("direct heap store %v on %s", core.heap != nil, kind)
				}
				hash := Hasher[K]()
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
				}
			})
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

// TestHasherMemoryKeys: a key whose derived encoding is its memory (a
// struct of numbers) hashes its memory directly, to the hash of its
// encoding, as keys of other structs do: the key groups of saved state
// stay where they were.
func TestHasherMemoryKeys(t *testing.T) {
	type pair struct{ A, B int64 }
	type mixed struct {
		A int64
		S string
	}
	c := codec.MustFor[pair]()
	if _, mem := codec.MemorySize(c); !mem {
		t.Fatal("a pair of int64 does not encode as its memory")
	}
	h := Hasher[pair]()
	for _, k := range []pair{{}, {1, 2}, {-1, 1 << 62}, {2001, 1000}} {
		if got, want := h(k), keygroup.HashBytes(c.AppendEncode(nil, k)); got != want {
			t.Errorf("Hasher(%v) = %d, want HashBytes of the encoding %d", k, got, want)
		}
	}
	hm, cm := Hasher[mixed](), codec.MustFor[mixed]()
	for _, k := range []mixed{{}, {7, "seven"}} {
		if got, want := hm(k), keygroup.HashBytes(cm.AppendEncode(nil, k)); got != want {
			t.Errorf("Hasher(%v) = %d, want %d", k, got, want)
		}
	}
}
