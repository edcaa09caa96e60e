// Clicks is a continuous job: generated page clicks, keyed by page, with a
// rolling count printed as it changes. Stop it with Ctrl-C.
//
//	go run .
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
