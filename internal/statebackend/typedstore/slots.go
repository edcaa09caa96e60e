package typedstore

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/weirhq/weir/internal/prefault"
	"github.com/weirhq/weir/internal/shortkey"
)

// inlineKey is how many bytes of map key a slot holds in place. Longer keys
// live in a string of their own (one allocation per key, and one more memory
// access per lookup). uvarint(len) | key fits for int64 keys and for strings
// of up to 15 bytes with no namespace. 16 rather than 24: the smaller
// slots keep a table of ten thousand keys within the L2 cache, where an
// access costs a fraction of one that misses it.
const inlineKey = 16

// prefFirstBytes is the size of a table's slots (at its average load)
// above which a lookup reads the key's preferred slot first, before the
// control word. Where the slots are in cache, the control word's extra
// load costs less than the branch on the preferred slot, which
// mispredicts for every key displaced from it. Where they are not (past
// the last-level cache), that load is a miss before the slot's miss, so
// the preferred slot goes first. 8 MiB per table is a share of a
// last-level cache that leaves room for the other tables and the other
// subtask.
const prefFirstBytes = 8 << 20

// longKey is the length byte of a key image for keys over inlineKey bytes.
const longKey = 0xff

// keyImage is a map key as the slots compare it: a hash with the length
// in its low byte (never 0, which marks a free slot: a map key has at
// least its length prefix), and the bytes of a short key zero-padded to
// whole words, so that comparing a short key is three word compares with
// no call.
//
// It has word fields and no array so that the compiler keeps it in
// registers: copying an array-typed image goes through 16-byte moves of
// words just stored one by one, which stall store forwarding.
type keyImage struct {
	hn     uint64
	w0, w1 uint64
}

// Per-process random seeds: which keys collide cannot be predicted from
// outside, so no input can make every key collide.
var (
	hashSeed            = maphash.MakeSeed()
	seed0, seed1, seed2 = rand.Uint64(), rand.Uint64(), rand.Uint64()
	seed3, seed4        = rand.Uint64(), rand.Uint64() | 1 // odd: a multiplier that loses no bit
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
	w0, w1 := shortkey.Words(k)
	return shortImage(w0, w1, len(k))
}

// plainImage returns the image of the map key of key with no namespace,
// reading key directly: uvarint(len(key)) | key. len(key) < inlineKey.
func plainImage(key []byte) keyImage {
	n := len(key)
	// The map key is key's bytes one byte later.
	k0, k1 := shortkey.Words(key)
	return shortImage(uint64(n)|k0<<8, k0>>56|k1<<8, n+1)
}

func shortImage(w0, w1 uint64, n int) keyImage {
	// n separates keys that differ only by trailing zero bytes. One fold
	// is not enough: an 8-byte key leaves w1 constant, and then runs of
	// keys (ids, i mod N) map by one multiplication, whose lattice put,
	// for some seeds, most of 896 sequential keys in a few home groups
	// (TestShortImageSpreadsRuns). The second fold spreads them as random
	// keys are spread, for every seed.
	h := mix(mix(w0^seed0, w1^seed1^uint64(n)*seed2)^seed3, seed4)
	return keyImage{hn: h<<8 | uint64(n), w0: w0, w1: w1}
}

// appendShort appends the map key of a short image with words w0, w1 and
// length byte hn&0xff to dst. The words hold the bytes little-endian on
// every machine, so they are written out, not aliased.
func appendShort(dst []byte, hn, w0, w1 uint64) []byte {
	n := len(dst) + int(hn&0xff)
	dst = binary.LittleEndian.AppendUint64(dst, w0)
	dst = binary.LittleEndian.AppendUint64(dst, w1)
	return dst[:n]
}

// Control bytes, one per slot, in one word per group of 8 slots (byte j
// of word g is slot 8g+j), as in Swiss tables: a full slot's byte is h2,
// 7 bits of its hash; the high bit marks an empty (ctrlEmpty) or deleted
// (ctrlDeleted) slot. A probe compares the 8 bytes of a group with h2 in a
// few word operations, so finding a key costs one control word (all of a
// table's control words are small enough to stay in cache), one slot, and
// branches that almost always go the same way; probing slot by slot
// mispredicted its exit on most lookups.
const (
	ctrlEmpty   = 0x80
	ctrlDeleted = 0xFE
	lsbs        = 0x0101010101010101
	msbs        = 0x8080808080808080
	emptyGroup  = ctrlEmpty * lsbs
)

// h2 is the control byte of a full slot with hash-and-length word hn.
func h2(hn uint64) uint64 { return hn >> 57 }

// homeGroup is the group where the probe for hn starts.
func homeGroup(hn, gmask uint64) uint64 { return (hn >> 8) & gmask }

// matchByte has the high bit set in each byte of w equal to b (< 0x80),
// and possibly in a byte above such a byte (a borrow): callers check the key.
func matchByte(w, b uint64) uint64 {
	x := w ^ (lsbs * b)
	return (x - lsbs) &^ x & msbs
}

// matchEmpty has the high bit set in each empty byte of w.
func matchEmpty(w uint64) uint64 { return w &^ (w << 6) & msbs }

// prefAt is the slot within its home group where a key goes if it is
// free: hash bits apart from the group's and h2's. A lookup reads that slot
// first, at an address known from the hash alone, and most keys are there;
// only the others need the control word, whose load must come before the
// slot's (at millions of keys each is a miss in every cache).
func prefAt(hn uint64) uint64 { return (hn >> 54) & 7 }

// byteAt is the slot within its group of the lowest byte flagged in m.
func byteAt(m uint64) uint64 { return uint64(bits.TrailingZeros64(m)) / 8 }

// slot is one place of a table: the key's image and the entry. For an
// 8-byte value (and no TTL) it is 32 bytes, two to a cache line and never
// across two: hash and version are 32 bits each, because a slot of 40
// bytes would span two lines every other slot. A long key is kept in
// slots.long, and w0 is its index there, so that slots stay small. A free
// slot is all zero.
//
// The slot keeps the low half of the image's hash word, its length byte
// and 24 bits of hash: enough to tell most other keys apart before the
// words are compared; what a lookup needs of the rest (home group,
// preferred place, control byte) comes from the key's own image, and
// rebuilt recomputes the whole word from the key (hashOf).
type slot[E any] struct {
	hn     uint32 // uint32(keyImage.hn); 0: free
	ver    uint32 // see Table.owned
	w0, w1 uint64 // as in keyImage
	e      Entry[E]
}

// hashOf returns the hash word (keyImage.hn) of the key in sl.
func (t *slots[E]) hashOf(sl *slot[E]) uint64 {
	if sl.hn&0xff == longKey {
		return maphash.String(hashSeed, t.long[sl.w0])<<8 | longKey
	}
	return shortImage(sl.w0, sl.w1, int(sl.hn&0xff)).hn
}

// pageBits sets the slots per page: a snapshot shares a table's pages, and
// the first write to a page afterwards copies that page alone (512 slots,
// 20-28 KB), not the whole table: the first write to a key group after
// a snapshot must not copy a table whose size grows with the state
// (slots that hold pointers are copied under the collector's write
// barrier).
const (
	pageBits = 9
	pageMask = 1<<pageBits - 1
)

// slots is a hash table of entries keyed by map key: groups of 8 slots
// probed in order from the key's home group, with at most 7/8 of the slots
// full or deleted. Entries live in the table itself, not behind pointers.
// (A Go map reads a control word, the key's string and the entry behind a
// pointer, and calls a hash function per lookup.)
//
// The slots are in pages of 1<<pageBits (one shorter page for a smaller
// table). A page is shared with a snapshot while its pver is older than
// the store's snapshot version; slot writes go through writable. Control
// words, page list and long keys are copied whole with the table (clone):
// they hold no entries, so that is a byte per slot plus 16 bytes per long
// key.
type slots[E any] struct {
	ctrl  []uint64    // one word per group; length zero or a power of two
	pages [][]slot[E] // 8 slots per group
	// p0 is pages[0] when that is the only page, else empty: a lookup in
	// a one-page table reads it next to ctrl, one dependent load fewer.
	p0   []slot[E]
	pver []uint64 // per page: the snapshot version it was copied (or made) at
	dead int      // deleted control bytes
	// long holds the keys over inlineKey bytes; free lists the unused
	// places of long.
	long []string
	free []uint64
}

// size is the number of slots.
func (t *slots[E]) size() int { return 8 * len(t.ctrl) }

// at returns slot i for reading.
func (t *slots[E]) at(i int) *slot[E] { return &t.pages[i>>pageBits][i&pageMask] }

// atFrom is at for a lookup that loaded p0 (t.p0) beside the control
// word: a one-page table's slot from it, another's through the page list.
func (t *slots[E]) atFrom(p0 []slot[E], i int) *slot[E] {
	if i < len(p0) {
		return &p0[i]
	}
	return t.at(i)
}

// writable returns slot i for writing at snapshot version ver, copying its
// page first if a snapshot shares it. The table itself must be owned.
// The copied page's bytes are counted for the snapshots that hold it
// (Store.hold) when h is not nil.
func (t *slots[E]) writable(i int, ver uint64, h *Table[E]) *slot[E] {
	p := i >> pageBits
	if t.pver[p] != ver {
		if h != nil {
			h.s.hold(t.pver[p], pageBytes(t.pages[p]), h.md.Name)
		}
		t.pages[p] = slices.Clone(t.pages[p])
		t.pver[p] = ver
		t.setP0()
	}
	return &t.pages[p][i&pageMask]
}

// key returns the map key of slot i: a long key's own bytes, or a short
// one written into *scratch.
func (t *slots[E]) key(i int, scratch *[]byte) []byte {
	sl := t.at(i)
	if sl.hn&0xff != longKey {
		*scratch = appendShort((*scratch)[:0], uint64(sl.hn), sl.w0, sl.w1)
		return *scratch
	}
	l := t.long[sl.w0]
	return unsafe.Slice(unsafe.StringData(l), len(l))
}

// find returns the index of the key with image im and bytes k, or -1.
// Table.lookup has a copy of the short-key case.
func (t *slots[E]) find(im *keyImage, k []byte) int {
	if len(t.ctrl) == 0 {
		return -1
	}
	gmask := uint64(len(t.ctrl) - 1)
	long := im.hn&0xff == longKey
	for g := homeGroup(im.hn, gmask); ; g = (g + 1) & gmask {
		w := t.ctrl[g]
		for m := matchByte(w, h2(im.hn)); m != 0; m &= m - 1 {
			i := int(g*8 + byteAt(m))
			sl := t.at(i)
			if sl.hn != uint32(im.hn) {
				continue
			}
			if long && t.long[sl.w0] == string(k) || !long && sl.w0 == im.w0 && sl.w1 == im.w1 {
				return i
			}
		}
		if matchEmpty(w) != 0 {
			return -1
		}
	}
}

// needsGrow says whether adding a key to the n there are would exceed
// the limit of full and deleted slots.
func (t *slots[E]) needsGrow(n int) bool { return (n+1+t.dead)*8 > t.size()*7 }

// grownSize is the size of the table that holds t's n keys with room for
// more, once needsGrow says t is full: twice t's (at least 2 groups)
// unless most of t's used slots are deleted ones, then the same size
// (rebuilt without them). The caller takes the memory before it rebuilds.
func (t *slots[E]) grownSize(n int) int {
	size := max(16, t.size())
	if (n+1)*16 > size*7 {
		size *= 2
	}
	return size
}

// sizeFor is the table size that holds n keys without growing.
func sizeFor(n int) int {
	size := 16
	for n*8 > size*7 {
		size *= 2
	}
	return size
}

// rebuilt returns a table of size slots (a power of two, at least 16, with
// room for t's keys) holding t's keys, without its deleted slots, with its
// pages made at version ver. It never writes to t, which may be shared with
// a snapshot. sizes, if not nil, holds a word per slot of t (group.sizes,
// see sizer): the words of the new table, each where its slot went, are
// returned.
func (t *slots[E]) rebuilt(size int, ver uint64, sizes []int64) (slots[E], []int64) {
	nt := slots[E]{ctrl: make([]uint64, size/8), long: slices.Clone(t.long), free: slices.Clone(t.free)}
	for g := range nt.ctrl {
		nt.ctrl[g] = emptyGroup
	}
	for len(nt.pages)<<pageBits < size {
		pg := make([]slot[E], min(size, 1<<pageBits))
		// Entries holding pointers are written through the write barrier,
		// which reads the old pointer first while the collector runs.
		prefault.Fresh(pg)
		nt.pages = append(nt.pages, pg)
		nt.pver = append(nt.pver, ver)
	}
	nt.setP0()
	var nsizes []int64
	if sizes != nil {
		nsizes = make([]int64, size)
	}
	for p, pg := range t.pages {
		for i := range pg {
			if pg[i].hn != 0 {
				j := nt.place(t.hashOf(&pg[i]))
				*nt.at(j) = pg[i]
				if sizes != nil {
					nsizes[j] = sizes[p<<pageBits+i]
				}
			}
		}
	}
	return nt, nsizes
}

// pageBytes is what a page of slots takes.
func pageBytes[E any](pg []slot[E]) int64 { return int64(len(pg)) * int64(unsafe.Sizeof(slot[E]{})) }

// sharedBytes is what a clone copies (and a snapshot sharing the table
// still holds afterwards): the control words, the page list and the
// long keys' list.
func (t *slots[E]) sharedBytes() int64 {
	return int64(8*len(t.ctrl) + 24*len(t.pages) + 8*len(t.pver) + 16*len(t.long) + 8*len(t.free))
}

// place marks the first empty or deleted slot on hn's probe path as full
// and returns its index. There must be one.
func (t *slots[E]) place(hn uint64) int {
	gmask := uint64(len(t.ctrl) - 1)
	home := homeGroup(hn, gmask)
	for g := home; ; g = (g + 1) & gmask {
		w := t.ctrl[g]
		if m := w & msbs; m != 0 {
			j := byteAt(m)
			if p := prefAt(hn); g == home && w>>(8*p)&0x80 != 0 {
				j = p
			}
			if w>>(8*j)&0xff == ctrlDeleted {
				t.dead--
			}
			t.ctrl[g] = w&^(0xff<<(8*j)) | h2(hn)<<(8*j)
			return int(g*8 + j)
		}
	}
}

// insert places the absent key with image im and bytes k in a free slot,
// which the caller has made sure exists, and returns its index. The table
// must be owned; ver is the snapshot version, for the slot's page.
func (t *slots[E]) insert(im *keyImage, k []byte, ver uint64, h *Table[E]) int {
	i := t.place(im.hn)
	sl := t.writable(i, ver, h)
	sl.hn, sl.w0, sl.w1 = uint32(im.hn), im.w0, im.w1
	if im.hn&0xff == longKey {
		if n := len(t.free); n > 0 {
			sl.w0, t.free = t.free[n-1], t.free[:n-1]
			t.long[sl.w0] = string(k)
		} else {
			sl.w0 = uint64(len(t.long))
			t.long = append(t.long, string(k))
		}
	}
	return i
}

// remove frees slot i of an owned table. Its control byte becomes empty if
// its group has an empty slot (then no probe ever went past the group: a
// group that has been full never gets an empty byte back), else deleted, so
// that probes for keys placed further on still pass it.
func (t *slots[E]) remove(i int, ver uint64, h *Table[E]) {
	sl := t.writable(i, ver, h)
	if sl.hn&0xff == longKey {
		t.long[sl.w0] = ""
		t.free = append(t.free, sl.w0)
	}
	*sl = slot[E]{}
	g, j := i/8, uint64(i%8)
	w := t.ctrl[g]
	b := uint64(ctrlEmpty)
	if matchEmpty(w) == 0 {
		b = ctrlDeleted
		t.dead++
	}
	t.ctrl[g] = w&^(0xff<<(8*j)) | b<<(8*j)
}

// clone copies the table for copy-on-write, sharing its pages (empty stays
// empty): what a write changes besides slots.
func (t *slots[E]) clone() slots[E] {
	return slots[E]{ctrl: slices.Clone(t.ctrl), pages: slices.Clone(t.pages), pver: slices.Clone(t.pver), p0: t.p0,
		dead: t.dead, long: slices.Clone(t.long), free: slices.Clone(t.free)}
}

// setP0 sets p0 after pages changed.
func (t *slots[E]) setP0() {
	t.p0 = nil
	if len(t.pages) == 1 {
		t.p0 = t.pages[0]
	}
}
