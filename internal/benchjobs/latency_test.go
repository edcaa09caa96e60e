package benchjobs

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
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

// A histogram's file form (what a subtask on a cluster writes) decodes to
// the same histogram.
func TestHistogramJSON(t *testing.T) {
	r := testseed.Rand(t, 3601)
	var h Histogram
	for range 10_000 {
		h.Record(int64(r.ExpFloat64() * 1e6))
	}
	b, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	var got Histogram
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Errorf("decoded histogram differs: count %d max %d p99 %d, want %d %d %d", got.Count(), got.Max(), got.Quantile(0.99),
			h.Count(), h.Max(), h.Quantile(0.99))
	}
	if err := json.Unmarshal([]byte(`{"N":1,"Max":1,"Counts":{"99999":1}}`), &got); err == nil {
		t.Error("a bucket out of range decoded")
	}
}

// With StatsDir the subtasks write their results to files and
// ReadLatencyStats merges them: here in one process, so every record's
// source subtask is local and none crossed processes.
func TestKeyedLatencyStatsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a job for half a second")
	}
	dir := t.TempDir()
	o := LatencyOptions{Keys: 100, Parallelism: 2, Rate: 20_000, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, StatsDir: dir}
	if _, err := KeyedLatency(context.Background(), o, nil); err != nil {
		t.Fatal(err)
	}
	res, err := ReadLatencyStats(o)
	if err != nil {
		t.Fatal(err)
	}
	// 20,000/s for 0.4 s: 8,000 records, 6,000 of them after the warm-up.
	if res.TotalEvents != 8000 || res.Events < 5000 || res.Events > 7000 {
		t.Errorf("%d events, %d after the warm-up; want 8000 and about 6000", res.TotalEvents, res.Events)
	}
	if res.Latency.Count() != res.Events || res.Local.Count() != res.Events || res.Remote.Count() != 0 {
		t.Errorf("latency of %d records, %d local, %d remote; want %d, all local", res.Latency.Count(), res.Local.Count(), res.Remote.Count(), res.Events)
	}
	if res.Window < 200*time.Millisecond || res.Window > 400*time.Millisecond {
		t.Errorf("measured window %v, want about 300ms", res.Window)
	}
	os.Remove(filepath.Join(dir, "sink-1.json"))
	if _, err := ReadLatencyStats(o); err == nil {
		t.Error("a missing sink file was not reported")
	}
	o.Keys = 101
	if _, err := KeyedLatency(context.Background(), o, nil); err == nil {
		t.Error("keys not a multiple of the parallelism were accepted")
	}
}
