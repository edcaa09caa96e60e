// Package window owns the pure arithmetic of time windows, as Flink defines
// it: which windows an element belongs to (tumbling, sliding, with offsets,
// for any int64 timestamp), how session windows merge, when a window or an
// element is late and when a window's state is cleaned up, and the namespace
// bytes a window's state and timers are stored under; and, for the sliced
// operator, the slices of sliding windows (slices.go) and the two-stacks
// aggregator that merges a window's slices in amortized O(1) (stacks.go).
// It has no keyed state and no I/O; the window operators in the root
// package (windowop.go, windowslice.go) apply it.
package window
