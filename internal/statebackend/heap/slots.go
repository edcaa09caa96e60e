package heap

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// inlineKey is how many bytes of map key a slot holds in place. Longer keys
// live in a string of their own (one allocation per key, and one more memory
// access per lookup). uvarint(len) | key fits for int64 keys and for strings
// of up to 23 bytes with no namespace.
const inlineKey = 24

// longKey is the length byte of a key image for keys over inlineKey bytes.
const longKey = 0xff

// keyImage is a map key as the slots compare it: a hash with the length
// in its low byte (never 0, which marks a free slot: a map key has at
// least its length prefix), and the bytes of a
// short key zero-padded to whole words, so that comparing a short key is
// four word compares with no call.
//
// It has four word fields and no array so that the compiler keeps it in
// registers: copying an array-typed image goes through 16-byte moves of
// words just stored one by one, which stall store forwarding.
type keyImage struct {
	hn         uint64
	w0, w1, w2 uint64
}

// Per-process random seeds: which keys collide cannot be predicted from
// outside, so no input can make every key collide.
var (
	hashSeed            = maphash.MakeSeed()
	seed0, seed1, seed2 = rand.Uint64(), rand.Uint64(), rand.Uint64()
	seed3               = rand.Uint64()
)

// mix is the folded 128-bit product, as in wyhash.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// imageOf returns the image of map key k.
func imageOf(k []byte) keyImage {
	if len(k) > inlineKey {
		return keyImage{hn: maphash.Bytes(hashSeed, k)<<8 | longKey}
	}
	w0, w1, w2 := words(k)
	return shortImage(w0, w1, w2, len(k))
}

// plainImage returns the image of the map key of key with no namespace,
// reading key directly: uvarint(len(key)) | key. len(key) < inlineKey.
func plainImage(key []byte) keyImage {
	n := len(key)
	// The map key is key's bytes one byte later.
	k0, k1, k2 := words(key)
	return shortImage(uint64(n)|k0<<8, k0>>56|k1<<8, k1>>56|k2<<8, n+1)
}

// words loads up to inlineKey bytes as little-endian words, zero-padded.
func words(k []byte) (w0, w1, w2 uint64) {
	switch n := len(k); {
	case n > 16:
		return le64(k), le64(k[8:]), tail(k[16:])
	case n > 8:
		return le64(k), tail(k[8:]), 0
	}
	return tail(k), 0, 0
}

func shortImage(w0, w1, w2 uint64, n int) keyImage {
	h := mix(w0^seed0, w1^seed1) ^ mix(w2^seed2, uint64(n)^seed3)
	return keyImage{hn: h<<8 | uint64(n), w0: w0, w1: w1, w2: w2}
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// tail loads up to 8 bytes as a little-endian word, zero-padded, with no
// stores (a byte-wise copy into a word and reading it back stalls store
// forwarding; this is on every state access).
func tail(b []byte) uint64 {
	switch n := len(b); {
	case n >= 8:
		return le64(b)
	case n >= 4:
		// Two overlapping 4-byte loads; the overlap ORs equal bytes.
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4))
	case n > 0:
		return uint64(b[0]) | uint64(b[n/2])<<(8*(n/2)) | uint64(b[n-1])<<(8*(n-1))
	}
	return 0
}

// bytes returns the map key of a short image (aliasing it).
func (im *keyImage) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&im.w0)), im.hn&0xff) // w0..w2 are contiguous
}

// home is where the probe for a key image starts.
func (im *keyImage) home(mask uint64) uint64 { return (im.hn >> 8) & mask }

// slot is one place of a table: the key's image and the entry. For an
// 8-byte value it is 56 bytes, so a lookup usually reads one or two
// adjacent cache lines. A long key is kept in slots.long, and w0 is its
// index there, so that slots stay small.
type slot[E any] struct {
	hn         uint64 // 0: free
	w0, w1, w2 uint64 // as in keyImage
	e          Entry[E]
}

// slots is a linear-probing hash table of entries keyed by map key, with at
// most 3/4 of its places used. Entries live in the table itself, not
// behind pointers. (A Go map reads a control word, the key's string and
// the entry behind a pointer, and calls a hash function per lookup.)
type slots[E any] struct {
	s []slot[E] // length zero or a power of two
	// long holds the keys over inlineKey bytes; free lists the unused
	// places of long.
	long []string
	free []uint64
}

func (t *slots[E]) key(i int) []byte {
	sl := &t.s[i]
	if n := sl.hn & 0xff; n != longKey {
		return unsafe.Slice((*byte)(unsafe.Pointer(&sl.w0)), n) // w0..w2 are contiguous
	}
	l := t.long[sl.w0]
	return unsafe.Slice(unsafe.StringData(l), len(l))
}

// find returns the index of the key with image im and bytes k, or -1.
func (t *slots[E]) find(im *keyImage, k []byte) int {
	ss := t.s
	if len(ss) == 0 {
		return -1
	}
	mask := uint64(len(ss) - 1)
	if im.hn&0xff != longKey {
		for i := im.home(mask); ; i = (i + 1) & mask {
			sl := &ss[i]
			if sl.hn == im.hn && sl.w0 == im.w0 && sl.w1 == im.w1 && sl.w2 == im.w2 {
				return int(i)
			}
			if sl.hn == 0 {
				return -1
			}
		}
	}
	for i := im.home(mask); ; i = (i + 1) & mask {
		sl := &ss[i]
		if sl.hn == im.hn && t.long[sl.w0] == string(k) {
			return int(i)
		}
		if sl.hn == 0 {
			return -1
		}
	}
}

// needsGrow says whether one more key would exceed the load limit.
func (t *slots[E]) needsGrow(n int) bool { return (n+1)*4 > len(t.s)*3 }

// grown returns a new table twice the size (at least 8) holding t's keys.
// It never writes to t, which may be shared with a snapshot.
func (t *slots[E]) grown() slots[E] {
	n := max(8, 2*len(t.s))
	nt := slots[E]{s: make([]slot[E], n), long: slices.Clone(t.long), free: slices.Clone(t.free)}
	mask := uint64(n - 1)
	for i := range t.s {
		h := t.s[i].hn
		if h == 0 {
			continue
		}
		j := (h >> 8) & mask
		for nt.s[j].hn != 0 {
			j = (j + 1) & mask
		}
		nt.s[j] = t.s[i]
	}
	return nt
}

// insert places the absent key with image im and bytes k in a free slot,
// which the caller has made sure exists, and returns its index.
func (t *slots[E]) insert(im *keyImage, k []byte) int {
	mask := uint64(len(t.s) - 1)
	i := im.home(mask)
	for t.s[i].hn != 0 {
		i = (i + 1) & mask
	}
	sl := &t.s[i]
	sl.hn, sl.w0, sl.w1, sl.w2 = im.hn, im.w0, im.w1, im.w2
	if im.hn&0xff == longKey {
		if n := len(t.free); n > 0 {
			sl.w0, t.free = t.free[n-1], t.free[:n-1]
			t.long[sl.w0] = string(k)
		} else {
			sl.w0 = uint64(len(t.long))
			t.long = append(t.long, string(k))
		}
	}
	return int(i)
}

// remove frees slot i, shifting later entries of the same probe run back
// so that lookups need no tombstones.
func (t *slots[E]) remove(i int) {
	if t.s[i].hn&0xff == longKey {
		l := t.s[i].w0
		t.long[l] = ""
		t.free = append(t.free, l)
	}
	mask := uint64(len(t.s) - 1)
	at := uint64(i)
	for {
		j := at
		for {
			j = (j + 1) & mask
			h := t.s[j].hn
			if h == 0 {
				t.s[at] = slot[E]{}
				return
			}
			// j may move back to at if at lies on its probe path, home..j.
			if (j-(h>>8)&mask)&mask >= (j-at)&mask {
				break
			}
		}
		t.s[at] = t.s[j]
		at = j
	}
}

// clone copies the table for copy-on-write (empty stays empty).
func (t *slots[E]) clone() slots[E] {
	return slots[E]{s: slices.Clone(t.s), long: slices.Clone(t.long), free: slices.Clone(t.free)}
}
