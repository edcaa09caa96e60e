package keygroup

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// propRand returns a generator seeded by internal/testseed (WEIR_SEED replays).
func propRand(t *testing.T) *rand.Rand {
	t.Helper()
	return testseed.Rand(t, 0x9e3779b97f4a7c15)
}

// randPair draws 1 <= p <= maxP <= UpperBoundMaxParallelism, biased towards
// the edges (p == 1, p == maxP, powers of two).
func randPair(r *rand.Rand) (p, maxP int) {
	switch r.IntN(6) {
	case 0:
		maxP = 1 << r.IntN(16)
	case 1:
		maxP = 1 + r.IntN(256)
	default:
		maxP = 1 + r.IntN(UpperBoundMaxParallelism)
	}
	switch r.IntN(6) {
	case 0:
		p = 1
	case 1:
		p = maxP
	case 2:
		p = 1 + r.IntN(min(maxP, 64))
	default:
		p = 1 + r.IntN(maxP)
	}
	return p, maxP
}

func TestPropertyRangesPartitionKeyGroups(t *testing.T) {
	r := propRand(t)
	trials := 300
	if testing.Short() {
		trials = 30
	}
	for trial := 0; trial < trials; trial++ {
		p, maxP := randPair(r)
		if trial == 0 {
			p, maxP = UpperBoundMaxParallelism, UpperBoundMaxParallelism
		}
		if err := Validate(p, maxP); err != nil {
			t.Fatalf("Validate(%d, %d) = %v", p, maxP, err)
		}
		ranges := make([]Range, p)
		next := 0
		for i := range ranges {
			rg := RangeFor(i, p, maxP)
			ranges[i] = rg
			// Contiguous, in subtask order, never empty when p <= maxP.
			if rg.Start != next || rg.Len() < 1 {
				t.Fatalf("p=%d maxP=%d: RangeFor(%d) = %v, want start %d and non-empty", p, maxP, i, rg, next)
			}
			// Balanced: every subtask gets floor or ceil of maxP/p key groups.
			if lo := maxP / p; rg.Len() != lo && rg.Len() != lo+1 {
				t.Fatalf("p=%d maxP=%d: RangeFor(%d) = %v has %d key groups, want %d or %d", p, maxP, i, rg, rg.Len(), lo, lo+1)
			}
			next = rg.End + 1
		}
		if next != maxP {
			t.Fatalf("p=%d maxP=%d: ranges cover [0, %d), want [0, %d)", p, maxP, next, maxP)
		}
		// Every key group is owned by exactly the subtask OperatorIndex names:
		// its range contains kg, and (ranges being contiguous and ordered) the
		// neighbouring ranges do not.
		for kg := 0; kg < maxP; kg++ {
			op := OperatorIndex(kg, p, maxP)
			if op < 0 || op >= p {
				t.Fatalf("p=%d maxP=%d: OperatorIndex(%d) = %d out of [0, %d)", p, maxP, kg, op, p)
			}
			if !ranges[op].Contains(kg) {
				t.Fatalf("p=%d maxP=%d: OperatorIndex(%d) = %d but its range is %v", p, maxP, kg, op, ranges[op])
			}
			if op > 0 && ranges[op-1].Contains(kg) || op < p-1 && ranges[op+1].Contains(kg) {
				t.Fatalf("p=%d maxP=%d: key group %d is in more than one range", p, maxP, kg)
			}
		}
		// Brute-force exclusivity on small layouts.
		if p*maxP <= 1<<16 {
			for kg := 0; kg < maxP; kg++ {
				n := 0
				for _, rg := range ranges {
					if rg.Contains(kg) {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("p=%d maxP=%d: key group %d is in %d ranges", p, maxP, kg, n)
				}
			}
		}
		// Distinct subtasks' ranges do not intersect; a range intersects itself whole.
		for j := 0; j < 8; j++ {
			a, b := r.IntN(p), r.IntN(p)
			got := ranges[a].Intersect(ranges[b])
			if a == b && got != ranges[a] || a != b && got.Len() != 0 {
				t.Fatalf("p=%d maxP=%d: RangeFor(%d).Intersect(RangeFor(%d)) = %v", p, maxP, a, b, got)
			}
		}
		// Hashes land in [0, maxP) and their subtask is the one owning the key group.
		for j := 0; j < 64; j++ {
			h := r.Uint32()
			kg := ForHash(h, maxP)
			if Murmur(h) < 0 || kg < 0 || kg >= maxP {
				t.Fatalf("maxP=%d: Murmur(%d) = %d, ForHash = %d", maxP, h, Murmur(h), kg)
			}
		}
	}
}

func TestPropertyRangeAlgebra(t *testing.T) {
	r := propRand(t)
	randRange := func() Range {
		s := r.IntN(40)
		return Range{Start: s, End: s + r.IntN(24) - 4} // sometimes empty (End < Start)
	}
	for trial := 0; trial < 5000; trial++ {
		a, b := randRange(), randRange()
		x := a.Intersect(b)
		if y := b.Intersect(a); x.Len() != y.Len() || x.Len() > 0 && x != y {
			t.Fatalf("%v ∩ %v = %v but %v ∩ %v = %v", a, b, x, b, a, y)
		}
		na, nb, nx := 0, 0, 0
		for kg := -5; kg < 80; kg++ {
			inA, inB, inX := a.Contains(kg), b.Contains(kg), x.Contains(kg)
			if inX != (inA && inB) {
				t.Fatalf("%v ∩ %v = %v: Contains(%d) = %v, want %v", a, b, x, kg, inX, inA && inB)
			}
			if inA {
				na++
			}
			if inB {
				nb++
			}
			if inX {
				nx++
			}
		}
		if a.Len() != na || b.Len() != nb || x.Len() != nx {
			t.Fatalf("Len mismatch: %v Len %d counted %d; %v Len %d counted %d; %v Len %d counted %d",
				a, a.Len(), na, b, b.Len(), nb, x, x.Len(), nx)
		}
		if x.Len() > min(a.Len(), b.Len()) {
			t.Fatalf("%v ∩ %v = %v is larger than an operand", a, b, x)
		}
		if a.Len() > 0 && a.Intersect(a) != a {
			t.Fatalf("%v ∩ itself = %v", a, a.Intersect(a))
		}
	}
}

func TestPropertyDefaultMaxParallelism(t *testing.T) {
	r := propRand(t)
	for trial := 0; trial < 2000; trial++ {
		p := 1 + r.IntN(UpperBoundMaxParallelism)
		if trial < 64 {
			p = trial + 1
		}
		m := DefaultMaxParallelismFor(p)
		if m&(m-1) != 0 || m < DefaultMaxParallelism || m > UpperBoundMaxParallelism {
			t.Fatalf("DefaultMaxParallelismFor(%d) = %d: not a power of two in [%d, %d]", p, m, DefaultMaxParallelism, UpperBoundMaxParallelism)
		}
		// Smallest such power of two that is at least 1.5 x p, unless clamped.
		if want := p + p/2; m < UpperBoundMaxParallelism && m < want || m > DefaultMaxParallelism && m/2 >= want {
			t.Fatalf("DefaultMaxParallelismFor(%d) = %d, want the power of two just at or above %d", p, m, want)
		}
		if p <= m && Validate(p, m) != nil {
			t.Fatalf("Validate(%d, DefaultMaxParallelismFor = %d) = %v", p, m, Validate(p, m))
		}
	}
}

// The assigner agrees with ForHash for every max parallelism, power of two or not.
func TestAssignerMatchesForHash(t *testing.T) {
	rng := propRand(t)
	for range 2000 {
		maxP := 1 + rng.IntN(UpperBoundMaxParallelism)
		if rng.IntN(2) == 0 {
			maxP = 1 << rng.IntN(16)
		}
		a := NewAssigner(maxP)
		for range 50 {
			h := rng.Uint32()
			if got, want := a.KeyGroup(h), ForHash(h, maxP); got != want {
				t.Fatalf("maxP %d hash %d: assigner %d, ForHash %d", maxP, h, got, want)
			}
			// Batch loops route by the mask where there is one.
			if mask, ok := a.Mask(); ok != (maxP&(maxP-1) == 0) {
				t.Fatalf("maxP %d: Mask says power of two %v", maxP, ok)
			} else if ok && int(Murmur(h)&mask) != ForHash(h, maxP) {
				t.Fatalf("maxP %d hash %d: Murmur & mask %d, ForHash %d", maxP, h, Murmur(h)&mask, ForHash(h, maxP))
			}
		}
	}
}

// TestMurmurSignEdges checks the branch-free absolute value against Flink's
// definition for hashes whose scrambled value is negative, MinInt32 and
// zero-adjacent, besides the golden file.
func TestMurmurSignEdges(t *testing.T) {
	ref := func(code uint32) int32 {
		code *= 0xcc9e2d51
		code = code<<15 | code>>17
		code *= 0x1b873593
		code = code<<13 | code>>19
		code = code*5 + 0xe6546b64
		code ^= 4
		code ^= code >> 16
		code *= 0x85ebca6b
		code ^= code >> 13
		code *= 0xc2b2ae35
		code ^= code >> 16
		c := int32(code)
		if c >= 0 {
			return c
		}
		if c != math.MinInt32 {
			return -c
		}
		return 0
	}
	for _, c := range []int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, math.MaxInt32} {
		want := c
		if c < 0 {
			want = -c
		}
		if c == math.MinInt32 {
			want = 0
		}
		if got := flinkAbs(c); got != want {
			t.Fatalf("flinkAbs(%d) = %d, want %d", c, got, want)
		}
	}
	for i := uint32(0); i < 1<<20; i++ {
		for _, h := range []uint32{i, i * 2654435761, ^i} {
			if got, want := Murmur(h), ref(h); got != want {
				t.Fatalf("Murmur(%#x) = %d, want %d", h, got, want)
			}
		}
	}
}

func BenchmarkAssignerKeyGroup(b *testing.B) {
	a := NewAssigner(128)
	s := 0
	for i := range b.N {
		s += a.KeyGroup(HashInt64(int64(i % 10_000)))
	}
	sink = s
}

var sink int
