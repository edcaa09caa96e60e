package keygroup

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// HashBytes is FNV-1a: the standard library's implementation is the
// independent reference.
func TestHashBytesIsFNV1a(t *testing.T) {
	r := testseed.Rand(t, 0)
	for n := range 64 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		h := fnv.New32a()
		h.Write(b)
		if got, want := HashBytes(b), h.Sum32(); got != want {
			t.Fatalf("HashBytes(% x) = %#x, FNV-1a gives %#x", b, got, want)
		}
		if got, want := HashFNV.Bytes(b), h.Sum32(); got != want {
			t.Fatalf("HashFNV.Bytes(% x) = %#x, FNV-1a gives %#x", b, got, want)
		}
	}
}

// wordHashRef is HashWordBytes written the long way: the input padded with
// zeros to whole words, which are then read one by one.
func wordHashRef(b []byte) uint32 {
	padded := make([]byte, (len(b)+7)/8*8)
	copy(padded, b)
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for i := 0; i < len(padded); i += 8 {
		w := binary.LittleEndian.Uint64(padded[i:])
		h = bits.RotateLeft64(h^w, 29) * 0xbf58476d1ce4e5b9
	}
	return uint32(h>>32) ^ uint32(h)
}

// The word hash's values are kept in checkpoints (as key groups), so they
// are pinned here: a change of HashWordBytes that alters any of them must
// be a new HashVersion instead.
func TestHashWordBytesGolden(t *testing.T) {
	key := func(ws ...uint64) []byte {
		var b []byte
		for _, w := range ws {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
		return b
	}
	cases := []struct {
		in   []byte
		want uint32
	}{
		{nil, 0x00000000},
		{[]byte{0}, 0x847b4ab9},
		{[]byte("a"), 0xed659344},
		{[]byte("weir"), 0x9120bdbc},
		{key(1, 2), 0x8e50c794},
		{key(2, 1), 0x306aadaf},
		{key(1000, 2001), 0xd2cc6545},
		{key(math.MaxUint64, 0), 0x235134c4},
		{[]byte("a key of twenty-three"), 0x09180e98},
	}
	for _, c := range cases {
		if got := HashWordBytes(c.in); got != c.want {
			t.Errorf("HashWordBytes(%q) = %#08x, pinned %#08x", c.in, got, c.want)
		}
		if got := HashWords.Bytes(c.in); got != c.want {
			t.Errorf("HashWords.Bytes(%q) = %#08x, pinned %#08x", c.in, got, c.want)
		}
	}
	r := testseed.Rand(t, 0)
	for range 2000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := HashWordBytes(b), wordHashRef(b); got != want {
			t.Fatalf("HashWordBytes(% x) = %#x, the padded reference gives %#x", b, got, want)
		}
	}
}

// Keys of two small integers (Nexmark's (bidder, auction)) spread over the
// key groups as evenly as random ones would: the chi-square statistic of
// the counts per key group is within six standard deviations of its
// expectation under a uniform assignment (mean k-1, variance 2(k-1)).
func TestHashWordBytesSpreadsPairs(t *testing.T) {
	for _, maxP := range []int{128, 1000, 4096} {
		for _, v := range []HashVersion{HashFNV, HashWords} {
			a := NewAssigner(maxP)
			counts := make([]int, maxP)
			n := 0
			for x := range uint64(600) {
				for y := range uint64(500) {
					var b [16]byte
					binary.LittleEndian.PutUint64(b[:], 1000+x)
					binary.LittleEndian.PutUint64(b[8:], 2000+y*3)
					counts[a.KeyGroup(v.Bytes(b[:]))]++
					n++
				}
			}
			share := float64(n) / float64(maxP)
			chi2 := 0.0
			for _, c := range counts {
				d := float64(c) - share
				chi2 += d * d / share
			}
			df := float64(maxP - 1)
			if chi2 > df+6*math.Sqrt(2*df) {
				t.Errorf("max parallelism %d, hash version %d: chi-square %.0f over %d key groups, uniform gives %.0f ± %.0f",
					maxP, v, chi2, maxP, df, math.Sqrt(2*df))
			}
		}
	}
}

func TestHashVersionValid(t *testing.T) {
	for v, want := range map[HashVersion]bool{0: false, HashFNV: true, HashWords: true, CurrentHash + 1: false} {
		if v.Valid() != want {
			t.Errorf("HashVersion(%d).Valid() = %v", v, !want)
		}
	}
}

func BenchmarkKeyHash16(b *testing.B) {
	key := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 123456), 7890123)
	for _, v := range []HashVersion{HashFNV, HashWords} {
		b.Run(fmt.Sprintf("v%d", v), func(b *testing.B) {
			var s uint32
			for i := 0; b.Loop(); i++ {
				key[0] = byte(i)
				s += v.Bytes(key)
			}
			if s == 1 {
				b.Log(s)
			}
		})
	}
}
