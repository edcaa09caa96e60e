package nexmark

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// randomLines prints what testdata/RandomGolden.java prints, from the Go
// port: the same seeds, calls and formatting.
func randomLines(prices int) []string {
	seeds := []int64{0, 1, -1, 2, 42, 1000003, 123456789012345, math.MinInt64, math.MaxInt64}
	bounds := []int32{1, 2, 3, 4, 5, 6, 9, 10, 11, 13, 26, 100, 1000, 1666, 10000, 1 << 30, 1073741825, math.MaxInt32}
	var out []string
	for _, seed := range seeds {
		r := newJavaRandom(seed)
		for i := range 60 {
			var v string
			switch i % 4 {
			case 0:
				b := bounds[i%len(bounds)]
				v = fmt.Sprintf("nextInt(%d) %d", b, r.nextIntN(b))
			case 1:
				v = fmt.Sprintf("nextInt() %d", r.nextInt())
			case 2:
				v = fmt.Sprintf("nextLong() %d", r.nextLong())
			default:
				v = "nextDouble() " + strconv.FormatUint(math.Float64bits(r.nextDouble()), 16)
			}
			out = append(out, fmt.Sprintf("seed %d i %d %s", seed, i, v))
		}
	}
	for s := range prices {
		r := newJavaRandom(int64(s))
		out = append(out, fmt.Sprintf("price %d %d", s, nextPrice(&r)))
	}
	return out
}

// TestJavaRandomGolden checks the port against values printed by Java 17's
// java.util.Random (testdata/RandomGolden.java), kept here so the test
// runs without Java.
func TestJavaRandomGolden(t *testing.T) {
	got := map[string]bool{}
	for _, l := range randomLines(200000) {
		got[l] = true
	}
	for _, want := range []string{
		"seed 0 i 0 nextInt(1) 0",
		"seed 0 i 1 nextInt() -723955400",
		"seed 0 i 2 nextLong() 4437113781045784766",
		"seed 0 i 3 nextDouble() 3fe465b93a78ef81",
		"seed 0 i 4 nextInt(5) 1",
		"seed -1 i 1 nextInt() 1887904451",
		"seed -1 i 2 nextLong() 226341162490527646",
		"seed -1 i 3 nextDouble() 3fe52fcbccce6dda",
		"seed -1 i 13 nextInt() -1153077986",
		"seed -1 i 15 nextDouble() 3fedc49273a24dfe",
		"seed 42 i 1 nextInt() 234785527",
		"seed 42 i 2 nextLong() -5843495416241995736",
		"seed 42 i 3 nextDouble() 3fd3c20f3f12bbb4",
		"seed 42 i 13 nextInt() -7822877",
		"seed 42 i 15 nextDouble() 3fdbef77d7096b88",
		"price 0 2431122",
		"price 1 2428114",
		"price 7 2422112",
		"price 199999 54165",
	} {
		if !got[want] {
			t.Errorf("the port does not print %q", want)
		}
	}
}

// javaOrSkip returns the java command, skipping the test without it
// (failing under CI, where Java must be installed).
func javaOrSkip(t *testing.T) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("java is not on PATH (CI=true needs it to compare with Java): %v", err)
		}
		t.Skipf("java is not on PATH: %v", err)
	}
	return java
}

// TestJavaRandomAgainstJava runs Java's own java.util.Random and Math.pow
// (Nexmark's prices) and compares every line with the port's.
func TestJavaRandomAgainstJava(t *testing.T) {
	java := javaOrSkip(t)
	const prices = 200000
	src, err := filepath.Abs("testdata/RandomGolden.java")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, src, strconv.Itoa(prices))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java %s: %v\n%s", src, err, stderr.String())
	}
	want := randomLines(prices)
	sc := bufio.NewScanner(bytes.NewReader(out))
	i, bad := 0, 0
	for sc.Scan() {
		if i >= len(want) {
			t.Fatalf("java printed more than the %d lines of the port: %q", len(want), sc.Text())
		}
		if g := sc.Text(); g != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("line %d: java %q, port %q", i+1, g, want[i])
			}
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("java printed %d lines, the port %d: %s", i, len(want), strings.TrimSpace(stderr.String()))
	}
	if bad > 0 {
		t.Fatalf("%d of %d lines differ", bad, len(want))
	}
}

// TestPow10 checks the specialised pow10 against math.Pow bit for bit, on
// the doubles Nexmark's prices use and on the special cases.
func TestPow10(t *testing.T) {
	rng := testseed.Rand(t, 0)
	check := func(y float64) {
		if got, want := pow10(y), math.Pow(10, y); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("pow10(%v) = %v, math.Pow %v", y, got, want)
		}
	}
	for _, y := range []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 5.5, math.Nextafter(6, 0), math.Nextafter(0.5, 1), math.Nextafter(0.5, 0), 1e-300} {
		check(y)
	}
	for range 2_000_000 {
		// nextDouble()*6 as nextPrice draws it: 53 random bits.
		check(float64(rng.Uint64()>>11) * (1.0 / (1 << 53)) * 6.0)
	}
}

// TestPriceOf checks the price's fast path against the exact one: random
// draws as nextPrice makes them, the ends of the range, and prices right
// at and around the rounding points (where the exact path must decide).
func TestPriceOf(t *testing.T) {
	rng := testseed.Rand(t, 0)
	check := func(y float64) {
		if got, want := priceOf(y), javaRound(pow10(y)*100.0); got != want {
			t.Fatalf("priceOf(%v) = %d, exact %d", y, got, want)
		}
		if f, p := fastPow10(y), pow10(y); math.Abs(f-p) > p*priceMargin/10 {
			t.Fatalf("fastPow10(%v) = %v, pow10 %v: off by more than a tenth of the margin", y, f, p)
		}
	}
	for _, y := range []float64{0, 0.5, 1, 2, 3, 4, 5, math.Nextafter(6, 0), 1e-300, math.Nextafter(1, 0), math.Nextafter(1, 2)} {
		check(y)
	}
	for range 2_000_000 {
		check(float64(rng.Uint64()>>11) * (1.0 / (1 << 53)) * 6.0)
	}
	// y with pow10(y)*100 within ulps of k + 0.5: the nearest double and
	// two on each side of it.
	for range 20_000 {
		k := float64(100 + rng.IntN(100_000_000-100))
		mid := math.Log10((k + 0.5) / 100)
		y := math.Nextafter(math.Nextafter(mid, 0), 0)
		for range 5 {
			check(y)
			y = math.Nextafter(y, 10)
		}
	}
}
