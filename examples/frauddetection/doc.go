// Frauddetection flags a transaction above 500.00 that follows one below 1.00
// on the same account within a minute, with keyed state and event-time timers.
//
//	go run ./examples/frauddetection -input tx.jsonl -output alerts.jsonl -state-backend pebble
package main
