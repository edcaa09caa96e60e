package keygroup

import (
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

// HashBytes is the key hash of a key given by its encoded bytes (FNV-1a).
func HashBytes(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
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
