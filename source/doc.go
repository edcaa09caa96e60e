// Package source is the contract of Weir's sources, after Flink's FLIP-27:
// a split enumerator on the JobManager discovers the work as splits and
// hands them to readers on request; a reader per subtask reads its splits.
// A reader's splits, with the positions reached in them, are its
// checkpointed state, and the enumerator's unassigned splits are the
// enumerator's: after a failure both are restored from the last completed
// checkpoint and reading resumes exactly there.
//
// Everything here can be implemented outside Weir's module; the built-in
// connectors use nothing else.
package source
