// Package sink is the contract of Weir's sinks, after Flink's Sink V2: a
// writer per subtask, and for exactly-once output a two-phase commit: at
// every checkpoint barrier the writer prepares committables for what it
// wrote (pre-commit), they are stored in the checkpoint, and a committer
// commits them once the checkpoint is complete. After a failure, the
// committables of the last completed checkpoint are committed again, so a
// committer must be idempotent.
//
// Everything here can be implemented outside Weir's module; the built-in
// sinks use nothing else.
package sink
