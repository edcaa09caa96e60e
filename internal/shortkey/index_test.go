package shortkey

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// TestIndexMatchesMap records random keys, of every length around the
// inline limit and with NUL bytes (which the words' zero padding must not
// confuse with a shorter key), in an Index and in a Go map, and checks
// that both number every key the same.
func TestIndexMatchesMap(t *testing.T) {
	rng := testseed.Rand(t, 0)
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	var x Index
	model := map[string]int{}
	for step := range 200_000 {
		var k string
		if rng.IntN(4) == 0 && step > 0 {
			// an earlier key, or a key one byte longer or shorter
			for k = range model {
				break
			}
			switch rng.IntN(3) {
			case 1:
				k += "\x00"
			case 2:
				k = k[:len(k)/2]
			}
		} else {
			b := make([]byte, rng.IntN(MaxInline+6))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			k = string(b)
		}
		want, had := model[k]
		if !had {
			want = len(model)
			model[k] = want
		}
		got, found := x.Index(k, len(model)-1)
		if found != had || got != want {
			t.Fatalf("step %d, key %q: Index gave (%d, %v), want (%d, %v)", step, k, got, found, want, had)
		}
	}
	if x.Len() != len(model) {
		t.Fatalf("Len %d, want %d", x.Len(), len(model))
	}
	for k, want := range model {
		if got, found := x.Index(k, -1); !found || got != want {
			t.Fatalf("key %q: (%d, %v), want (%d, true)", k, got, found, want)
		}
	}
}

// TestWordsPadWithZeros checks Words against a byte-by-byte reference for
// every length up to 20.
func TestWordsPadWithZeros(t *testing.T) {
	for n := range 21 {
		b := []byte(strings.Repeat("\xa5", 24))[:n]
		for i := range b {
			b[i] = byte(i + 1)
		}
		var want [2]uint64
		for i := 0; i < min(n, 16); i++ {
			want[i/8] |= uint64(b[i]) << (8 * (i % 8))
		}
		w0, w1 := Words(b)
		if w0 != want[0] || w1 != want[1] {
			t.Errorf("Words of %d bytes: %#x %#x, want %#x %#x", n, w0, w1, want[0], want[1])
		}
	}
}

func BenchmarkIndexWords(b *testing.B) {
	for _, keys := range []int{1_000, 50_000, 1_000_000} {
		words := make([]string, keys)
		for i := range words {
			words[i] = fmt.Sprintf("w%x", i*2654435761%(1<<31))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		seq := make([]string, 1<<16)
		for i := range seq {
			// a copy: a decoded key never shares the stored key's bytes, which
			// a map compares by pointer first
			seq[i] = strings.Clone(words[rng.IntN(keys)])
		}
		b.Run(fmt.Sprintf("keys=%d/index", keys), func(b *testing.B) {
			var x Index
			for i := 0; b.Loop(); i++ {
				x.Index(seq[i&(len(seq)-1)], x.Len())
			}
		})
		b.Run(fmt.Sprintf("keys=%d/map", keys), func(b *testing.B) {
			m := map[string]int{}
			for i := 0; b.Loop(); i++ {
				k := seq[i&(len(seq)-1)]
				if _, ok := m[k]; !ok {
					m[k] = len(m)
				}
			}
		})
	}
}
