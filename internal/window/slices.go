package window

// Slice arithmetic for the sliced window operator (windowslice.go in the
// root package; docs/windows.md, decision 29): a sliding window of size and slide is cut
// into slices of length gcd(size, slide) aligned to the same offset, so each
// element updates one slice and a window is the union of the size/gcd slices
// it covers. Everything here is pure; timestamps near the int64 ends are
// clamped the way Start and end clamp them.

// SliceLen is the slice length for windows of size and slide (both > 0):
// gcd(size, slide), the longest length whose aligned slices tile every window.
func SliceLen(size, slide int64) int64 {
	a, b := size, slide
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// SliceOf is the slice holding ts for windows of size and slide at offset.
func SliceOf(ts, size, slide, offset int64) Window {
	return Tumbling(ts, SliceLen(size, slide), offset)
}

// WindowEndingWith reports the window whose last slice is s, if one exists:
// the window [s.End-size, s.End) when its start is aligned to slide at
// offset. A sliced operator fires this window when the watermark passes
// s.End-1, merging its size/SliceLen slices.
func WindowEndingWith(s Window, size, slide, offset int64) (Window, bool) {
	if s.End < minStart+size {
		return Window{}, false
	}
	start := s.End - size
	if Start(start, offset, slide) != start {
		return Window{}, false
	}
	return Window{start, s.End}, true
}

// minStart keeps WindowEndingWith's subtraction from wrapping.
const minStart = -1 << 63
