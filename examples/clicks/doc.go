// Clicks is a continuous job: generated page clicks, keyed by page, with a
// rolling count printed as it changes. Stop it with Ctrl-C.
//
//	go run ./examples/clicks
package main
