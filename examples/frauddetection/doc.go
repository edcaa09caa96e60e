// Frauddetection is Flink's fraud detection tutorial with Weir: it flags a
// transaction above 500.00 that follows one below 1.00 on the same account
// within a minute of event time. It shows a keyed process function with
// keyed state (ValueState) and event-time timers that clear the state
// when the minute is over.
//
// The transactions are generated (a few accounts, with planted small-then-
// large pairs, some within the minute and some after it); the alerts are
// printed.
//
//	go run .
//	go run . -transactions 100000 -parallelism 4 -state-backend pebble
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
