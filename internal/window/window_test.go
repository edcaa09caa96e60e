package window

import (
	"math"
	"slices"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

func TestTumblingAndSlidingGolden(t *testing.T) {
	for _, c := range []struct {
		ts, size, offset int64
		want             Window
	}{
		{0, 10, 0, Window{0, 10}},
		{9, 10, 0, Window{0, 10}},
		{10, 10, 0, Window{10, 20}},
		{-1, 10, 0, Window{-10, 0}},
		{-10, 10, 0, Window{-10, 0}},
		{-11, 10, 0, Window{-20, -10}},
		{5, 10, 3, Window{3, 13}},
		{2, 10, 3, Window{-7, 3}},
		{2, 10, -7, Window{-7, 3}}, // offset -7 aligns as 3
		{2, 10, 13, Window{-7, 3}}, // offsets beyond the size wrap
		{1_700_000_123_456, 60_000, 0, Window{1_700_000_100_000, 1_700_000_160_000}},
		{math.MaxInt64, 10, 0, Window{math.MaxInt64 - 7, math.MaxInt64}},  // end clamps
		{math.MinInt64, 10, 0, Window{math.MinInt64, math.MinInt64 + 10}}, // start clamps
	} {
		if got := Tumbling(c.ts, c.size, c.offset); got != c.want {
			t.Errorf("Tumbling(%d, size %d, offset %d) = %v, want %v", c.ts, c.size, c.offset, got, c.want)
		}
	}
	for _, c := range []struct {
		ts, size, slide, offset int64
		want                    []Window
	}{
		{7, 10, 5, 0, []Window{{5, 15}, {0, 10}}},
		{5, 10, 5, 0, []Window{{5, 15}, {0, 10}}},
		{4, 10, 5, 0, []Window{{0, 10}, {-5, 5}}},
		{-1, 10, 5, 0, []Window{{-5, 5}, {-10, 0}}},
		{7, 10, 3, 0, []Window{{6, 16}, {3, 13}, {0, 10}, {-3, 7}}[:3]}, // [-3,7) does not hold 7
		{7, 5, 10, 0, nil}, // slide > size: gaps
		{12, 5, 10, 0, []Window{{10, 15}}},
		{1, 10, 5, 2, []Window{{-3, 7}, {-8, 2}}},
	} {
		if got := Sliding[Window](nil, c.ts, c.size, c.slide, c.offset); !slices.Equal(got, c.want) {
			t.Errorf("Sliding(%d, size %d, slide %d, offset %d) = %v, want %v", c.ts, c.size, c.slide, c.offset, got, c.want)
		}
	}
}

// Sliding and tumbling windows equal their definition, enumerated by brute
// force, on random inputs.
func TestAssignersMatchDefinition(t *testing.T) {
	r := testseed.Rand(t, 0)
	for range 20000 {
		size := 1 + r.Int64N(50)
		slide := 1 + r.Int64N(50)
		offset := r.Int64N(200) - 100
		ts := r.Int64N(2000) - 1000
		var want []Window
		// Every s = k*slide + offset with s <= ts < s+size, latest first.
		for k := (ts-offset)/slide + 2; k >= (ts-size-offset)/slide-2; k-- {
			s := k*slide + offset
			if s <= ts && ts < s+size {
				want = append(want, Window{s, s + size})
			}
		}
		if got := Sliding[Window](nil, ts, size, slide, offset); !slices.Equal(got, want) {
			t.Fatalf("Sliding(%d, size %d, slide %d, offset %d) = %v, want %v", ts, size, slide, offset, got, want)
		}
		var tw Window
		for k := (ts-size-offset)/size - 2; k <= (ts-offset)/size+2; k++ {
			if s := k*size + offset; s <= ts && ts < s+size {
				tw = Window{s, s + size}
			}
		}
		if got := Tumbling(ts, size, offset); got != tw {
			t.Fatalf("Tumbling(%d, size %d, offset %d) = %v, want %v", ts, size, offset, got, tw)
		}
	}
}

func TestLateness(t *testing.T) {
	w := Window{0, 10}
	for _, c := range []struct {
		lateness, wm int64
		late         bool
	}{{0, 8, false}, {0, 9, true}, {5, 13, false}, {5, 14, true}, {math.MaxInt64, math.MaxInt64 - 1, false}} {
		if got := IsWindowLate(w, c.lateness, c.wm); got != c.late {
			t.Errorf("IsWindowLate(%v, lateness %d, wm %d) = %t", w, c.lateness, c.wm, got)
		}
	}
	if CleanupTime(w, math.MaxInt64) != math.MaxInt64 {
		t.Error("cleanup time must saturate")
	}
	if !IsElementLate(5, 0, 5) || IsElementLate(5, 1, 5) || IsElementLate(math.MaxInt64, 10, math.MaxInt64) {
		t.Error("IsElementLate")
	}
}

// Merging sessions equals recomputing the sessions from scratch: the
// union of all intervals so far, touching ones joined (Flink's intersects).
func TestMergeSessionMatchesUnion(t *testing.T) {
	r := testseed.Rand(t, 0)
	for round := range 2000 {
		var sessions, all []Window
		for range 1 + r.IntN(12) {
			w := Session(r.Int64N(100), 1+r.Int64N(15))
			all = append(all, w)
			var result Window
			var merged []Window
			before := slices.Clone(sessions)
			sessions, result, merged = MergeSession(sessions, w)
			want := unionOf(all)
			if !slices.Equal(sessions, want) {
				t.Fatalf("round %d: after adding %v to %v: %v, want %v", round, w, before, sessions, want)
			}
			if !slices.Contains(sessions, result) || result.Start > w.Start || result.End < w.End {
				t.Fatalf("round %d: result %v does not hold %v in %v", round, result, w, sessions)
			}
			// merged: exactly the earlier sessions that are now part of
			// result, unless w fell inside one without extending it.
			var wantMerged []Window
			for _, s := range before {
				if s.Start >= result.Start && s.End <= result.End {
					wantMerged = append(wantMerged, s)
				}
			}
			if len(wantMerged) == 1 && wantMerged[0] == result {
				wantMerged = nil
			}
			if !slices.Equal(merged, wantMerged) {
				t.Fatalf("round %d: adding %v to %v merged %v, want %v", round, w, before, merged, wantMerged)
			}
		}
	}
}

func unionOf(ws []Window) []Window {
	s := slices.Clone(ws)
	slices.SortFunc(s, func(a, b Window) int { return int(a.Start - b.Start) })
	var out []Window
	for _, w := range s {
		if n := len(out); n > 0 && out[n-1].End >= w.Start {
			out[n-1].End = max(out[n-1].End, w.End)
			continue
		}
		out = append(out, w)
	}
	return out
}

func TestNamespaceRoundTripAndOrder(t *testing.T) {
	ws := []Window{{math.MinInt64, -5}, {-5, 0}, {-1, 10}, {0, 10}, {0, 11}, {7, math.MaxInt64}}
	var prev []byte
	for _, w := range ws {
		b := AppendNamespace(nil, w)
		got, err := ParseNamespace(b)
		if err != nil || got != w {
			t.Fatalf("%v -> %x -> %v, %v", w, b, got, err)
		}
		if prev != nil && string(prev) >= string(b) {
			t.Fatalf("namespace of %v does not sort after the previous", w)
		}
		prev = b
	}
	if _, err := ParseNamespace([]byte{1, 2}); err == nil {
		t.Fatal("a short namespace must fail")
	}
}

func TestCompactNamespace(t *testing.T) {
	const size = 10
	for _, start := range []int64{0, -1, 1, -compactLimit, compactLimit - 1, compactLimit, -compactLimit - 1, math.MinInt64, math.MaxInt64 - 5} {
		w := Window{start, end(start, size)}
		b := AppendCompactNamespace(nil, w)
		fits := start >= -compactLimit && start < compactLimit
		if fits != (len(b) == CompactLen) {
			t.Errorf("start %d: %d bytes", start, len(b))
		}
		got, err := ParseNamespaceSized(b, size)
		if err != nil || got != w {
			t.Errorf("start %d: %x -> %v, %v; want %v", start, b, got, err, w)
		}
	}
	a, b := AppendCompactNamespace(nil, Window{-5, 5}), AppendCompactNamespace(nil, Window{3, 13})
	if string(a) >= string(b) {
		t.Error("compact namespaces must sort by start")
	}
}
