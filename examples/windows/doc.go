// Windows counts sensor readings in event-time windows: a one-second
// tumbling average per sensor with allowed lateness, a sliding maximum
// (five seconds, every second), session windows per sensor, and the readings
// that came too late for any window, from a side output. The readings are
// generated out of order, with a few far behind, so late firings and late
// data show up.
//
//	go run .
//	go run . -readings 100000 -parallelism 4 -state-backend pebble
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
