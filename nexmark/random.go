package nexmark

// javaRandom is java.util.Random's algorithm as the JDK specifies it: a
// 48-bit linear congruential generator whose seed is scrambled on creation,
// and nextInt(bound), nextInt(), nextLong() and nextDouble() drawing bits
// from it exactly as Java does. Nexmark draws each event's fields from such
// a generator seeded with the event id, so reproducing it bit for bit is
// what makes Weir's events equal the Java generator's.
type javaRandom struct{ seed uint64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = 1<<48 - 1
)

// newJavaRandom is `new java.util.Random(seed)`.
func newJavaRandom(seed int64) javaRandom {
	return javaRandom{seed: (uint64(seed) ^ javaMultiplier) & javaMask}
}

// reset is setSeed(seed), without allocating a new generator per event.
func (r *javaRandom) reset(seed int64) {
	r.seed = (uint64(seed) ^ javaMultiplier) & javaMask
}

// next is Random.next(bits): the top bits of the advanced 48-bit seed, as
// a signed 32-bit value (Java's (int) cast of an unsigned shift).
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(r.seed >> (48 - bits))
}

// nextInt is Random.nextInt().
func (r *javaRandom) nextInt() int32 { return r.next(32) }

// nextIntN is Random.nextInt(bound) for bound > 0: a power of two takes the
// high bits; any other bound rejects the top partial range so every value
// is equally likely (the loop runs again with probability < 1/2).
func (r *javaRandom) nextIntN(bound int32) int32 {
	if bound <= 0 {
		panic("nexmark: nextInt bound must be positive")
	}
	rnd := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(rnd)) >> 31)
	}
	// Java's `u - (r = u % bound) + m < 0` relies on int overflow, which
	// Go's int32 arithmetic wraps the same way.
	for u := rnd; ; u = r.next(31) {
		rnd = u % bound
		if u-rnd+m >= 0 {
			return rnd
		}
	}
}

// nextLong is Random.nextLong().
func (r *javaRandom) nextLong() int64 {
	hi := int64(r.next(32))
	lo := int64(r.next(32))
	return hi<<32 + lo
}

// nextDouble is Random.nextDouble(): 53 random bits scaled into [0, 1).
func (r *javaRandom) nextDouble() float64 {
	hi := int64(r.next(26))
	lo := int64(r.next(27))
	return float64(hi<<27+lo) * (1.0 / (1 << 53))
}

// nextIntNConst is nextIntN for a bound that is not a power of two, small
// enough to inline: at a call with a constant bound the remainder compiles
// to a multiply instead of a division. The string generator draws
// nextIntNConst(13) and nextIntNConst(26) per letter, most of what an
// auction costs to generate.
func (r *javaRandom) nextIntNConst(bound int32) int32 {
	for {
		u := r.next(31)
		if v := u % bound; u-v+(bound-1) >= 0 {
			return v
		}
	}
}
