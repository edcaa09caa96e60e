// Intervaljoin joins ad clicks with the impressions they came from: a
// click counts when it follows an impression of the same ad within ten
// seconds of event time. It shows an interval join of two keyed streams
// with event time, then a tumbling window that counts the joined clicks per
// campaign and minute.
//
// Impressions and clicks are generated, slightly out of order; some clicks
// come too late after their impression, and a few come without one.
//
//	go run .
//	go run . -impressions 100000 -parallelism 4
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
