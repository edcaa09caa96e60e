package window

import (
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// TestSlicesTileSlidingWindows checks the slice arithmetic against the
// element-wise assigner Sliding: every window holding ts contains ts's slice,
// is a whole number of slices, and is found by WindowEndingWith from its last
// slice; and a slice's WindowEndingWith result, when present, is one of the
// windows Sliding assigns to a timestamp in that slice.
func TestSlicesTileSlidingWindows(t *testing.T) {
	r := testseed.Rand(t, 1)
	for i := 0; i < 20000; i++ {
		slide := 1 + r.Int64N(50)
		size := slide * (1 + r.Int64N(8))
		if r.IntN(3) == 0 { // sizes that are not a multiple of slide
			size = 1 + r.Int64N(200)
		}
		offset := r.Int64N(2*slide) - slide
		ts := r.Int64N(20000) - 10000
		g := SliceLen(size, slide)
		if size%g != 0 || slide%g != 0 {
			t.Fatalf("SliceLen(%d, %d) = %d does not divide both", size, slide, g)
		}
		s := SliceOf(ts, size, slide, offset)
		if !(s.Start <= ts && ts < s.End && s.End-s.Start == g) {
			t.Fatalf("SliceOf(%d, %d, %d, %d) = %v", ts, size, slide, offset, s)
		}
		ws := Sliding[Window](nil, ts, size, slide, offset)
		for _, w := range ws {
			if w.Start > s.Start || w.End < s.End || (w.Start-s.Start)%g != 0 {
				t.Fatalf("window %v does not cover slice %v of ts %d (size %d slide %d offset %d)", w, s, ts, size, slide, offset)
			}
			last := Window{w.End - g, w.End}
			got, ok := WindowEndingWith(last, size, slide, offset)
			if !ok || got != w {
				t.Fatalf("WindowEndingWith(%v) = %v, %v; want %v", last, got, ok, w)
			}
		}
		// Reverse direction: a window found from ts's slice is a window of ts.
		if w, ok := WindowEndingWith(s, size, slide, offset); ok {
			found := false
			for _, x := range ws {
				found = found || x == w
			}
			if !found {
				t.Fatalf("WindowEndingWith(%v) = %v, not among Sliding(%d) = %v", s, w, ts, ws)
			}
		}
	}
}
