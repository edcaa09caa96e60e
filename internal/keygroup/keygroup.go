package keygroup

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// DefaultMaxParallelism is the number of key groups used when a job does not
// set one and its parallelism is small.
const DefaultMaxParallelism = 128

// UpperBoundMaxParallelism is the largest allowed number of key groups.
const UpperBoundMaxParallelism = 1 << 15

// Range is the inclusive range [Start, End] of key groups owned by one subtask.
// An empty range has End < Start.
type Range struct {
	Start, End int
}

// Len is the number of key groups in the range.
func (r Range) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Contains reports whether key group kg is in the range.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Intersect returns the key groups in both ranges (possibly empty).
func (r Range) Intersect(o Range) Range {
	return Range{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
}

func (r Range) String() string { return fmt.Sprintf("[%d, %d]", r.Start, r.End) }

// Murmur scrambles a 32-bit key hash exactly like Flink's MathUtils.murmurHash,
// returning a non-negative value.
func Murmur(code uint32) int32 {
	code *= 0xcc9e2d51
	code = bits.RotateLeft32(code, 15) // intrinsics keep Murmur inlinable
	code *= 0x1b873593
	code = bits.RotateLeft32(code, 13)
	code = code*5 + 0xe6546b64
	code ^= 4
	code ^= code >> 16
	code *= 0x85ebca6b
	code ^= code >> 13
	code *= 0xc2b2ae35
	code ^= code >> 16
	return flinkAbs(int32(code))
}

// flinkAbs is Flink's c >= 0 ? c : c != MIN_VALUE ? -c : 0, branch-free:
// the sign is a coin toss per key, and a branch on it mispredicted half the
// time (this runs twice per keyed record: to route it and to set the key).
func flinkAbs(c int32) int32 {
	m := c >> 31     // -1 when negative, else 0
	a := (c ^ m) - m // |c|, except MinInt32 stays MinInt32
	return a &^ (a >> 31)
}

// ForHash returns the key group of a key whose 32-bit hash is keyHash.
func ForHash(keyHash uint32, maxParallelism int) int {
	return int(Murmur(keyHash)) % maxParallelism
}

// OperatorIndex returns the subtask that owns key group kg.
func OperatorIndex(kg, parallelism, maxParallelism int) int {
	return kg * parallelism / maxParallelism
}

// RangeFor returns the key groups owned by subtask index of an operator with
// the given parallelism.
func RangeFor(index, parallelism, maxParallelism int) Range {
	start := (index*maxParallelism + parallelism - 1) / parallelism
	end := ((index+1)*maxParallelism - 1) / parallelism
	return Range{Start: start, End: end}
}

// DefaultMaxParallelismFor returns Flink's default number of key groups for a
// parallelism: 1.5 x parallelism rounded up to a power of two, within
// [DefaultMaxParallelism, UpperBoundMaxParallelism].
func DefaultMaxParallelismFor(parallelism int) int {
	n := 1
	for n < parallelism+parallelism/2 {
		n <<= 1
	}
	return min(max(n, DefaultMaxParallelism), UpperBoundMaxParallelism)
}

// Validate reports whether parallelism and maxParallelism can be used together.
func Validate(parallelism, maxParallelism int) error {
	if parallelism < 1 {
		return fmt.Errorf("parallelism %d must be at least 1", parallelism)
	}
	if maxParallelism < 1 || maxParallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("max parallelism %d must be in [1, %d]", maxParallelism, UpperBoundMaxParallelism)
	}
	if parallelism > maxParallelism {
		return fmt.Errorf("parallelism %d exceeds max parallelism %d", parallelism, maxParallelism)
	}
	return nil
}

// HashInt64 is the key hash of a 64-bit integer key (Java's Long.hashCode).
func HashInt64(v int64) uint32 { return uint32(v) ^ uint32(uint64(v)>>32) }

// HashInt32 is the key hash of a 32-bit integer key (Java's Integer.hashCode).
func HashInt32(v int32) uint32 { return uint32(v) }

// HashString is the key hash of a string key: 32-bit FNV-1a over its UTF-8 bytes.
func HashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// HashBytes is the key hash of a key given by its encoded bytes under
// HashFNV (FNV-1a, one byte at a time).
func HashBytes(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// HashWordBytes is the key hash of a key given by its encoded bytes under
// HashWords: eight little-endian bytes at a time, each word rotated into the
// state and multiplied, the last word padded with zeros, the length mixed in
// first. FNV-1a is one dependent multiply per byte (16 for a key of two
// int64s); this is one per word, and Assigner.KeyGroup's Murmur finishes the
// mixing. Key groups are kept in checkpoints, so this function must never
// change: hash_test.go pins its values.
func HashWordBytes(b []byte) uint32 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(b), 29) * 0xbf58476d1ce4e5b9
		b = b[8:]
	}
	if len(b) > 0 {
		var w uint64
		for i, c := range b {
			w |= uint64(c) << (8 * i)
		}
		h = bits.RotateLeft64(h^w, 29) * 0xbf58476d1ce4e5b9
	}
	return uint32(h ^ h>>32)
}

// HashVersion names the function from keys to key hashes a job uses. Key
// groups are kept in checkpoints and savepoints with the state, so a job
// restored from one must hash its keys as the job that wrote it did: the
// version is in the checkpoint's metadata, and the JobManager hands it to
// every task (the partitioners and the keyed operators).
type HashVersion uint8

const (
	// HashFNV: integer keys by their value (HashInt64, HashInt32), strings
	// by FNV-1a over their bytes (HashString), every other key by FNV-1a
	// over its encoding (HashBytes). Metadata that names no version (written
	// before versions were recorded) used it.
	HashFNV HashVersion = 1
	// HashWords is HashFNV, except that keys hashed from their encoding
	// (structs, arrays, keys with a codec) use HashWordBytes.
	HashWords HashVersion = 2
	// CurrentHash is the version of a job that starts without state.
	CurrentHash = HashWords
)

// Valid reports whether v is a version this build knows.
func (v HashVersion) Valid() bool { return v >= HashFNV && v <= CurrentHash }

// String says what v hashes how, for people (weir savepoint inspect).
func (v HashVersion) String() string {
	switch v {
	case HashFNV:
		return "version 1 (FNV-1a over each key's encoding)"
	case HashWords:
		return "version 2 (struct and encoded keys hashed by words)"
	}
	return fmt.Sprintf("version %d (unknown to this build)", uint8(v))
}

// Bytes is v's hash of a key given by its encoded bytes.
func (v HashVersion) Bytes(b []byte) uint32 {
	if v == HashFNV {
		return HashBytes(b)
	}
	return HashWordBytes(b)
}

// Assigner maps key hashes to key groups for one max parallelism. It masks
// instead of dividing when maxParallelism is a power of two (the default),
// since it runs once per record.
type Assigner struct {
	maxP int
	mask int32 // maxP-1 for a power of two, else -1
}

// NewAssigner returns the assigner for maxParallelism key groups.
func NewAssigner(maxParallelism int) Assigner {
	a := Assigner{maxP: maxParallelism, mask: -1}
	if maxParallelism&(maxParallelism-1) == 0 {
		a.mask = int32(maxParallelism - 1)
	}
	return a
}

// Mask returns maxParallelism-1 and true when maxParallelism is a power
// of two: then KeyGroup(h) is int(Murmur(h) & mask). A loop over a batch
// of keys tests this once and inlines Murmur, where KeyGroup (over the
// inlining budget with its fallback) is a call per key.
func (a Assigner) Mask() (int32, bool) { return a.mask, a.mask >= 0 }

// KeyGroup is ForHash(keyHash, maxParallelism).
func (a Assigner) KeyGroup(keyHash uint32) int {
	m := Murmur(keyHash) // once, so it is inlined once
	if a.mask >= 0 {
		return int(m & a.mask)
	}
	return int(m) % a.maxP
}
