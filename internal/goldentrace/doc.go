// Package goldentrace reads and rewrites the golden trace files of the
// data-driven tests of Weir's pure state machines (barrier alignment, the
// credit ledger, the checkpoint coordinator), in the style of etcd-raft's
// interaction tests.
//
// A trace is a sequence of blocks separated by blank lines. Each block is
// one command, a line "----", and the expected output. Lines starting with #
// before a command are comments kept with it. Each package's test gives the
// commands their meaning; this package owns only the file format: parsing,
// comparing a block's output with what the file expects, and writing the
// file again with the actual output when the test runs with -rewrite.
package goldentrace
