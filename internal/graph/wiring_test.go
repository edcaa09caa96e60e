package graph

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// flinkPointwise is Apache Flink's POINTWISE wiring, transcribed from
// EdgeManagerBuildUtil.connectPointwise (flink-runtime,
// org.apache.flink.runtime.executiongraph): with as many producers as
// consumers, i feeds i; with more producers, consumer j reads producers
// [j*p/q, (j+1)*p/q); with fewer, producer i feeds consumers
// [ceil(i*q/p), ceil((i+1)*q/p)). It returns, per consumer, its producers.
func flinkPointwise(p, q int) [][]int {
	sources := make([][]int, q)
	switch {
	case p == q:
		for i := range p {
			sources[i] = []int{i}
		}
	case p > q:
		for j := range q {
			for i := j * p / q; i < (j+1)*p/q; i++ {
				sources[j] = append(sources[j], i)
			}
		}
	default:
		for i := range p {
			for j := (i*q + p - 1) / p; j < ((i+1)*q+p-1)/p; j++ {
				sources[j] = append(sources[j], i)
			}
		}
	}
	return sources
}

func TestWiringProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.New(t), 0))
	for p := 1; p <= 64; p++ {
		for q := 1; q <= 64; q++ {
			for _, pat := range []Pattern{AllToAll, Pointwise} {
				checkWiring(t, pat, p, q, r)
			}
			if got, want := fmt.Sprint(sourcesOf(Pointwise, p, q)), fmt.Sprint(flinkPointwise(p, q)); got != want {
				t.Errorf("pointwise %d -> %d: sources %s, Flink's %s", p, q, got, want)
			}
		}
	}
}

func sourcesOf(pat Pattern, p, q int) [][]int {
	_, s := Wiring(pat, p, q)
	return s
}

// checkWiring checks one wiring; r picks the random producer/consumer pairs
// whose membership is checked against both relations.
func checkWiring(t *testing.T, pat Pattern, p, q int, r *rand.Rand) {
	t.Helper()
	targets, sources := Wiring(pat, p, q)
	if len(targets) != p || len(sources) != q {
		t.Fatalf("%s %d -> %d: %d targets, %d sources", pat, p, q, len(targets), len(sources))
	}
	// targets and sources are inverse relations, each in increasing order
	// without repeats.
	conn := make([]bool, p*q) // conn[i*q+j]: producer i feeds consumer j
	for i, ts := range targets {
		if !slices.IsSorted(ts) || len(slices.Compact(slices.Clone(ts))) != len(ts) {
			t.Fatalf("%s %d -> %d: targets[%d]=%v not strictly increasing", pat, p, q, i, ts)
		}
		for _, j := range ts {
			conn[i*q+j] = true
		}
	}
	for j, ss := range sources {
		if !slices.IsSorted(ss) || len(slices.Compact(slices.Clone(ss))) != len(ss) {
			t.Fatalf("%s %d -> %d: sources[%d]=%v not strictly increasing", pat, p, q, j, ss)
		}
		for _, i := range ss {
			if !conn[i*q+j] {
				t.Fatalf("%s %d -> %d: %d -> %d in sources, not in targets", pat, p, q, i, j)
			}
			conn[i*q+j] = false
		}
	}
	if k := slices.Index(conn, true); k >= 0 {
		t.Fatalf("%s %d -> %d: %d -> %d in targets, not in sources", pat, p, q, k/q, k%q)
	}
	for range 8 {
		i, j := r.IntN(p), r.IntN(q)
		if slices.Contains(targets[i], j) != slices.Contains(sources[j], i) {
			t.Fatalf("%s %d -> %d: pair (%d, %d) in one relation only", pat, p, q, i, j)
		}
	}
	if pat == AllToAll {
		for i := range p {
			if len(targets[i]) != q {
				t.Fatalf("all-to-all %d -> %d: producer %d has %d targets", p, q, i, len(targets[i]))
			}
		}
		return
	}
	contiguous := func(s []int) bool { return len(s) > 0 && s[len(s)-1]-s[0] == len(s)-1 }
	for i, ts := range targets {
		if !contiguous(ts) {
			t.Fatalf("pointwise %d -> %d: producer %d has targets %v", p, q, i, ts)
		}
		if p >= q && len(ts) != 1 {
			t.Fatalf("pointwise %d -> %d: producer %d has %d targets, want 1", p, q, i, len(ts))
		}
	}
	for j, ss := range sources {
		if !contiguous(ss) {
			t.Fatalf("pointwise %d -> %d: consumer %d has sources %v", p, q, j, ss)
		}
		if p <= q && len(ss) != 1 {
			t.Fatalf("pointwise %d -> %d: consumer %d has %d sources, want 1", p, q, j, len(ss))
		}
		// Groups are balanced: sizes differ by at most one.
		if lo, hi := p/q, (p+q-1)/q; len(ss) < max(lo, 1) || len(ss) > hi {
			t.Fatalf("pointwise %d -> %d: consumer %d has %d sources", p, q, j, len(ss))
		}
	}
	if p == q {
		for i := range p {
			if targets[i][0] != i {
				t.Fatalf("pointwise %d -> %d is not one-to-one", p, q)
			}
		}
	}
}

// TestWiringGolden runs testdata/wiring.txt: `wiring pattern=P p=N q=M`
// prints each producer's consumers and each consumer's producers. The
// POINTWISE tables were checked by hand against Flink's rule (see
// flinkPointwise), which TestWiringProperties also compares for p, q <= 64.
func TestWiringGolden(t *testing.T) {
	runDataDriven(t, filepath.Join("testdata", "wiring.txt"), func(t *testing.T, tc *testCase) string {
		pat := Pointwise
		if tc.args["pattern"] == "all-to-all" {
			pat = AllToAll
		}
		targets, sources := Wiring(pat, tc.intArg(t, "p", 1), tc.intArg(t, "q", 1))
		var b strings.Builder
		for i, ts := range targets {
			fmt.Fprintf(&b, "producer %d -> %v\n", i, ts)
		}
		for j, ss := range sources {
			fmt.Fprintf(&b, "consumer %d <- %v\n", j, ss)
		}
		return b.String()
	})
}
