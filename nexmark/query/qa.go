package query

import (
	"math/big"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Helpers of q1, q2, q3, q10, q14, q21 and q22 (group qa).

// qaEuroPrice is Nexmark's `0.908 * price` (DECIMAL(23, 3), exact) as the
// float64 nearest to it: price*908 and 1000 are exact doubles below 2^53,
// so their quotient is correctly rounded. Larger prices go through an exact
// rational.
func qaEuroPrice(price int64) float64 {
	const exact = 1 << 53 / 908
	if price > -exact && price < exact {
		return float64(price*908) / 1000
	}
	f, _ := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(price), big.NewInt(908)), big.NewInt(1000)).Float64()
	return f
}

// qaLowerIs reports whether Flink's LOWER(s) (Java's String.toLowerCase)
// equals ascii, a lower-case ASCII word, without building the lower-cased
// string. Only two non-ASCII characters lower-case to ASCII letters in Go:
// the Kelvin sign (to 'k', in Java too) and U+0130, the capital I with a
// dot, which Java lower-cases to two characters ("i̇"), so it never
// matches.
func qaLowerIs(s, ascii string) bool {
	if len(s) == len(ascii) {
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != ascii[i] {
				break
			}
		}
		if i == len(s) {
			return true
		}
	}
	if len(s) < len(ascii) {
		return false // every rune lower-casing to one ASCII byte has at least one byte
	}
	// The slow path, for strings with non-ASCII runes.
	j := 0
	for _, r := range s {
		if r == 0x130 || j >= len(ascii) {
			return false
		}
		if r >= utf8.RuneSelf {
			r = unicode.ToLower(r)
		} else if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		if r != rune(ascii[j]) {
			return false
		}
		j++
	}
	return j == len(ascii)
}

// qaDayMinute splits epoch ms t into its UTC day (days since 1970-01-01)
// and the minute of that day.
func qaDayMinute(t int64) (day, minute int64) {
	const msPerDay = 86_400_000
	day, ms := t/msPerDay, t%msPerDay
	if ms < 0 {
		day--
		ms += msPerDay
	}
	return day, ms / 60_000
}

// qaAppendDate appends day (days since 1970-01-01) as yyyy-MM-dd, the
// proleptic Gregorian date Flink's DATE_FORMAT(ts, 'yyyy-MM-dd') gives for
// a TIMESTAMP taken as UTC (java.time, year of era), for years 1 to 9999.
func qaAppendDate(b []byte, day int64) []byte {
	// Civil from days (H. Hinnant's algorithm).
	z := day + 719_468
	era := z / 146_097
	if z < 0 && z%146_097 != 0 {
		era--
	}
	doe := z - era*146_097
	yoe := (doe - doe/1460 + doe/36_524 - doe/146_096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	b = qaAppendPadded(b, y, 4)
	b = append(b, '-')
	b = qaAppendPadded(b, m, 2)
	b = append(b, '-')
	return qaAppendPadded(b, d, 2)
}

// qaAppendMinute appends minute of the day as HH:mm.
func qaAppendMinute(b []byte, minute int64) []byte {
	b = qaAppendPadded(b, minute/60, 2)
	b = append(b, ':')
	return qaAppendPadded(b, minute%60, 2)
}

// qaAppendPadded appends n (non-negative) with at least width digits.
func qaAppendPadded(b []byte, n int64, width int) []byte {
	var digits [20]byte
	s := strconv.AppendInt(digits[:0], n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
