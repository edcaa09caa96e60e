package shortkey

import (
	"math/bits"
	"math/rand/v2"
	"unsafe"

	"github.com/weirhq/weir/internal/prefault"
)

// MaxInline is the longest key an Index holds in its slots; longer keys
// go to a Go map.
const MaxInline = 15

// Index numbers the distinct string keys it is given: Index(s, next)
// returns the number recorded for s, or records next. A key of up to
// MaxInline bytes lives in a slot as two words with its length, found by
// linear probing from a seeded hash, so finding it mostly reads one slot
// (more where the probe passes other keys' slots, at most half full). The
// zero Index is empty and ready.
type Index struct {
	slots []slot // a power of two of them, at most half full
	shift uint   // 64 - log2(len(slots)): a hash's top bits are its slot
	n     int    // keys in slots
	long  map[string]int
	seeds [4]uint64
}

// slot holds a key's bytes as Words does, its length plus one in w1's
// top byte (which a key of up to 15 bytes leaves zero), and its number.
// A free slot's w1 is 0, which no key's is.
type slot struct {
	w0, w1 uint64
	v      int
}

// Len is the number of keys recorded.
func (x *Index) Len() int { return x.n + len(x.long) }

// Index returns the number recorded for s and true, or records next for
// s and returns next and false.
func (x *Index) Index(s string, next int) (int, bool) {
	if len(s) > MaxInline {
		if v, ok := x.long[s]; ok {
			return v, true
		}
		if x.long == nil {
			x.long = map[string]int{}
		}
		x.long[s] = next
		return next, false
	}
	w0, w1 := Words(unsafe.Slice(unsafe.StringData(s), len(s)))
	w1 |= uint64(len(s)+1) << 56
	if (x.n+1)*2 > len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	for i := int(x.hash(w0, w1) >> x.shift); ; i = (i + 1) & mask {
		sl := &x.slots[i]
		if sl.w0 == w0 && sl.w1 == w1 {
			return sl.v, true
		}
		if sl.w1 == 0 {
			*sl = slot{w0: w0, w1: w1, v: next}
			x.n++
			return next, false
		}
	}
}

// hash spreads a key's words over 64 bits. Two folds of a 128-bit
// product, as the heap backend's keys: one leaves runs of keys that
// differ in one word on a lattice.
func (x *Index) hash(w0, w1 uint64) uint64 {
	return mix(mix(w0^x.seeds[0], w1^x.seeds[1])^x.seeds[2], x.seeds[3])
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// grow doubles the slots (the first time: makes 16, and draws the seeds,
// per Index so that no input makes every key collide).
func (x *Index) grow() {
	old := x.slots
	if old == nil {
		x.seeds = [4]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64() | 1}
	}
	size := max(16, 2*len(old))
	x.slots = make([]slot, size)
	prefault.Fresh(x.slots) // the probes below read before they write
	x.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, sl := range old {
		if sl.w1 == 0 {
			continue
		}
		i := int(x.hash(sl.w0, sl.w1) >> x.shift)
		for x.slots[i].w1 != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = sl
	}
}
