// Broadcast is Flink's broadcast state pattern: a stream of rules (the
// highest amount allowed per kind of payment) goes to every subtask and is
// kept in broadcast state, and a keyed stream of payments is checked
// against the rules in force when each payment arrives. Rules change while
// the job runs; each alert names the rule's version.
//
// A payment of a kind with no rule yet is held, per account, in keyed
// list state and checked when the next payment of that account comes.
//
//	go run .
//	go run . -payments 20000 -parallelism 4
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
