package nexmark

import "math"

// nextPrice is Nexmark's PriceGenerator.nextPrice:
// Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0), cents from
// 1.00 to 1,000,000.00 spread evenly over orders of magnitude.
func nextPrice(r *javaRandom) int64 {
	return javaRound(math.Pow(10.0, r.nextDouble()*6.0) * 100.0)
}

// javaRound is Java's Math.round for the non-negative values Nexmark
// rounds: floor(x + 0.5). For x below 2^52 the sum is exact when x's
// fraction is not within an ulp of 0.5 below, which only matters for
// 0.49999999999999994; Nexmark never rounds values below 100 that way.
func javaRound(x float64) int64 { return int64(math.Floor(x + 0.5)) }
