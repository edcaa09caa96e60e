package nexmark

import "math"

// nextPrice is Nexmark's PriceGenerator.nextPrice:
// Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0), cents from
// 1.00 to 1,000,000.00 spread evenly over orders of magnitude.
func nextPrice(r *javaRandom) int64 {
	return priceOf(r.nextDouble() * 6.0)
}

// priceOf is javaRound(pow10(y) * 100), the exact Math.pow path taken only
// when it could round otherwise than a fast approximation: the price
// changes only where pow10(y)*100 crosses an integer plus one half, and
// the approximation is within a relative 1e-14 of it (TestPriceOf), so
// when it is farther than that from such a point both round alike. That
// leaves the exp of pow10, the costly part, to about one price in a
// million.
func priceOf(y float64) int64 {
	p := fastPow10(y) * 100
	k := int64(p) // p >= 1: truncation is floor
	if d := p - float64(k) - 0.5; d > p*priceMargin || d < -p*priceMargin {
		return int64(p + 0.5)
	}
	return javaRound(pow10(y) * 100.0)
}

// priceMargin bounds fastPow10's relative error with room to spare: its
// table and polynomial are good to a few ulps, and y*log2(10) for y < 6
// loses at most 2^-48 of the exponent, 1e-15 of the result.
const priceMargin = 1e-13

// exp2Table[j] is 2^(j/256).
var exp2Table = func() (t [256]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return t
}()

// fastPow10 is 10^y for 0 <= y < 6 to a relative 1e-14: 2^(y*log2(10))
// as a power of two, a table entry of 2^(j/256) and a degree-4 Taylor
// polynomial of e^r for the remaining r < ln2/256 (truncation < 1e-17),
// evaluated in two independent halves to shorten the dependency chain.
func fastPow10(y float64) float64 {
	t := y * (math.Log2E * math.Ln10)
	n := int64(t) // t >= 0: truncation is floor
	f := (t - float64(n)) * 256
	j := int(f) & 255
	r := (f - float64(j)) * (math.Ln2 / 256)
	r2 := r * r
	e := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24))
	return math.Float64frombits(math.Float64bits(exp2Table[j]*e) + uint64(n)<<52)
}

// javaRound is Java's Math.round for the non-negative values Nexmark
// rounds: floor(x + 0.5). For x below 2^52 the sum is exact when x's
// fraction is not within an ulp of 0.5 below, which only matters for
// 0.49999999999999994; Nexmark never rounds values below 100 that way.
func javaRound(x float64) int64 { return int64(math.Floor(x + 0.5)) }

// ln10 is math.Log(10) as math.Pow computes it inside, once.
var ln10 = math.Log(10)

// pow10 is math.Pow(10, y) for 0 <= y < 6, bit for bit: the same steps as
// Go's pure-Go pow (the fraction through Exp(yf*Log(10)), the integer part
// by successive squarings) without recomputing Log(10) per call (ln10, on
// the generator's per-event path). TestPow10 checks it against
// math.Pow, and the Java test checks the prices against Java's Math.pow.
func pow10(y float64) float64 {
	switch y {
	case 0:
		return 1
	case 1:
		return 10
	case 0.5:
		return math.Sqrt(10)
	}
	yi, yf := math.Modf(y)
	a1 := 1.0
	ae := 0
	if yf != 0 {
		if yf > 0.5 {
			yf--
			yi++
		}
		a1 = math.Exp(yf * ln10)
	}
	x1, xe := 0.625, 4 // math.Frexp(10)
	for i := int64(yi); i != 0; i >>= 1 {
		if i&1 == 1 {
			a1 *= x1
			ae += xe
		}
		x1 *= x1
		xe <<= 1
		if x1 < .5 {
			x1 += x1
			xe--
		}
	}
	return math.Ldexp(a1, ae)
}
