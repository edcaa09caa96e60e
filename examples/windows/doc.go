// Windows counts sensor readings in event-time windows: a one-second
// tumbling average per sensor with allowed lateness, a sliding maximum
// (five seconds, every second), session windows per sensor, and the readings
// that came too late for any window, from a side output. The readings are
// generated out of order, with a few far behind, so late firings and late
// data show up.
//
//	go run ./examples/windows
//	go run ./examples/windows -readings 100000 -parallelism 4 -state-backend pebble
package main
