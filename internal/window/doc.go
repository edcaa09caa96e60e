// Package window owns the pure arithmetic of time windows, as Flink defines
// it: which windows an element belongs to (tumbling, sliding, with offsets,
// for any int64 timestamp), how session windows merge, when a window or an
// element is late and when a window's state is cleaned up, and the namespace
// bytes a window's state and timers are stored under. It has no state and
// no I/O; the window operator in the root package applies it.
package window
