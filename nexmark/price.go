package nexmark

import "math"

// nextPrice is Nexmark's PriceGenerator.nextPrice:
// Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0), cents from
// 1.00 to 1,000,000.00 spread evenly over orders of magnitude.
func nextPrice(r *javaRandom) int64 {
	return javaRound(pow10(r.nextDouble()*6.0) * 100.0)
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
// by successive squarings) without recomputing Log(10) per call, which
// was a tenth of the generator's time. TestPow10 checks it against
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
