package benchjobs

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Quantiles of the histogram are at least the exact ones and within 1/64.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b Histogram
	var vals []int64
	for i := range 100_000 {
		v := int64(rng.ExpFloat64() * 1e6)
		if i%1000 == 0 {
			v = int64(rng.IntN(1 << 40))
		}
		vals = append(vals, v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	slices.Sort(vals)
	if a.Count() != int64(len(vals)) || a.Max() != vals[len(vals)-1] {
		t.Fatalf("count %d max %d, want %d %d", a.Count(), a.Max(), len(vals), vals[len(vals)-1])
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[max(int(float64(len(vals))*q+0.999999)-1, 0)]
		got := a.Quantile(q)
		if got < exact || float64(got) > float64(exact)*(1+1.0/64)+1 {
			t.Errorf("q%v: %d, exact %d", q, got, exact)
		}
	}
	for v := int64(0); v < 1<<20; v += 7 {
		if i := histIndex(v); histUpper(i) < v || (i > 0 && histUpper(i-1) >= v) {
			t.Fatalf("value %d in bucket %d of upper %d", v, i, histUpper(i))
		}
	}
	var e Histogram
	if e.Quantile(0.99) != 0 {
		t.Error("empty histogram")
	}
	if allocs := testing.AllocsPerRun(100, func() { a.Record(12345) }); allocs != 0 {
		t.Errorf("Record allocates %v times", allocs)
	}
}
