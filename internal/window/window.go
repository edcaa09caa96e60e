package window

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Window is the time interval [Start, End) in ms.
type Window struct{ Start, End int64 }

// MaxTimestamp is the last ms in the window (End-1): when the event-time
// trigger fires it, and the timestamp of its results.
func (w Window) MaxTimestamp() int64 { return w.End - 1 }

// Intersects is Flink's TimeWindow.intersects: windows that overlap or touch
// (one ends where the other starts) merge as sessions.
func (w Window) Intersects(o Window) bool { return w.Start <= o.End && w.End >= o.Start }

// Cover is the smallest window holding both.
func (w Window) Cover(o Window) Window { return Window{min(w.Start, o.Start), max(w.End, o.End)} }

func (w Window) String() string { return fmt.Sprintf("[%d, %d)", w.Start, w.End) }

// Start is the start of the window of length size (> 0) holding ts, for
// windows aligned to offset: ts - ((ts - offset) mod size), the remainder
// kept non-negative so negative timestamps work too.
func Start(ts, offset, size int64) int64 {
	r := (ts%size - offset%size) % size
	if r < 0 {
		r += size
	}
	if ts < math.MinInt64+r {
		return math.MinInt64 // the aligned start is below the int64 range
	}
	return ts - r
}

// Tumbling is the tumbling window of size holding ts. A window that would
// end past math.MaxInt64 ends there.
func Tumbling(ts, size, offset int64) Window {
	s := Start(ts, offset, size)
	return Window{s, end(s, size)}
}

// Interval is any type laid out as a Window (the public TimeWindow), so
// assigners append to a caller's slice without converting.
type Interval interface{ ~struct{ Start, End int64 } }

// Sliding appends to dst every window [s, s+size) with s = k*slide + offset
// and s <= ts < s+size, latest start first (Flink's order).
func Sliding[W Interval](dst []W, ts, size, slide, offset int64) []W {
	for s := Start(ts, offset, slide); end(s, size) > ts; s -= slide {
		dst = append(dst, W{s, end(s, size)})
		if s < math.MinInt64+slide {
			break
		}
	}
	return dst
}

// Session is the window a session element opens: [ts, ts+gap).
func Session(ts, gap int64) Window { return Window{ts, end(ts, gap)} }

func end(start, size int64) int64 {
	if start > math.MaxInt64-size {
		return math.MaxInt64
	}
	return start + size
}

// CleanupTime is when a window's state goes: its max timestamp plus the
// allowed lateness (math.MaxInt64 if that overflows), as Flink's
// WindowOperator.cleanupTime for event time. Processing-time windows pass
// lateness 0.
func CleanupTime(w Window, lateness int64) int64 {
	t := w.MaxTimestamp() + lateness
	if t < w.MaxTimestamp() {
		return math.MaxInt64
	}
	return t
}

// IsWindowLate says whether an event-time window is past its cleanup time
// at watermark wm: an element for it is not added.
func IsWindowLate(w Window, lateness, wm int64) bool { return CleanupTime(w, lateness) <= wm }

// IsElementLate says whether an element with timestamp ts is late at
// watermark wm: ts + lateness <= wm.
func IsElementLate(ts, lateness, wm int64) bool {
	if ts > math.MaxInt64-lateness {
		return false
	}
	return ts+lateness <= wm
}

// MergeSession adds the new window w to a key's sessions (disjoint, not
// touching, sorted by start) the way Flink's MergingWindowSet does: the
// sessions w intersects merge with it into one window. It returns the
// resulting sessions, the window w ended up in, and the existing sessions
// that were merged into it (not including result itself when w fell inside
// an existing session without extending it: then merged is empty).
//
// The result is a new slice (sessions is not changed), of the caller's
// window type, so the caller may store it as it is.
func MergeSession[W Interval](sessions []W, w W) (out []W, result W, merged []W) {
	res := Window(w)
	out = make([]W, 0, len(sessions)+1)
	for _, s := range sessions {
		if ws := Window(s); ws.Intersects(Window(w)) {
			merged = append(merged, s)
			res = res.Cover(ws)
		} else {
			out = append(out, s)
		}
	}
	result = W(res)
	if len(merged) == 1 && merged[0] == result {
		merged = nil // w inside an existing session: nothing moves
	}
	i, _ := slices.BinarySearchFunc(out, result, func(a, b W) int {
		return cmp.Compare(Window(a).Start, Window(b).Start)
	})
	out = slices.Insert(out, i, result)
	return out, result, merged
}

// NamespaceLen is the length of a window's namespace.
const NamespaceLen = 16

// AppendNamespace appends w's namespace: start and end, big-endian with the
// sign bit flipped, so namespaces sort as windows do.
func AppendNamespace(b []byte, w Window) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(w.Start)^(1<<63))
	return binary.BigEndian.AppendUint64(b, uint64(w.End)^(1<<63))
}

// CompactLen is the length of the compact namespace of a window whose
// size the operator knows (tumbling and sliding windows): its start alone in
// 7 bytes, for starts within ±2^55 ms (a million years of epoch time). Short
// namespaces keep a window's state key within the heap backend's 16 inline
// bytes for keys of up to 8 bytes.
const CompactLen = 7

const compactLimit = 1 << 55

// AppendCompactNamespace appends the compact namespace of w if its start
// fits, else the full one.
func AppendCompactNamespace(b []byte, w Window) []byte {
	if w.Start < -compactLimit || w.Start >= compactLimit {
		return AppendNamespace(b, w)
	}
	u := uint64(w.Start) ^ (1 << 55) // sign flip within 56 bits: sorts by start
	return append(b, byte(u>>48), byte(u>>40), byte(u>>32), byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

// ParseNamespaceSized reads a namespace written by AppendCompactNamespace
// for windows of size ms.
func ParseNamespaceSized(b []byte, size int64) (Window, error) {
	if len(b) != CompactLen {
		return ParseNamespace(b)
	}
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	start := int64((u^(1<<55))<<8) >> 8 // sign-extend 56 bits
	return Window{start, end(start, size)}, nil
}

// ParseNamespace reads a window's namespace.
func ParseNamespace(b []byte) (Window, error) {
	if len(b) != NamespaceLen {
		return Window{}, fmt.Errorf("window: namespace of %d bytes, want %d", len(b), NamespaceLen)
	}
	return Window{int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), int64(binary.BigEndian.Uint64(b[8:]) ^ (1 << 63))}, nil
}
