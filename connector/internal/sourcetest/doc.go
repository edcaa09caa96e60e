// Package sourcetest drives a source.Source the way Weir's runtime does, on
// one goroutine, for the connectors' tests: a split enumerator, a reader per
// subtask, the events between them (assignments travel encoded, as they do
// between JobManager and tasks), checkpoints, and restores from them at any
// parallelism, with the readers' splits redistributed as operator list
// state is on a rescale (the splits of all old subtasks, in order, cut into
// contiguous runs).
//
// It models these guarantees of the runtime: a reader's restored splits
// are added before Start; a reader registers (AddReader) after Start; events
// arrive in the order they were sent, between polls, never during one;
// assignments sent before the enumerator's snapshot reach the readers
// before theirs; split requests in flight at a failure are lost (a restored
// reader asks again).
//
// A run that does not end in time fails with where each reader that has not
// ended is: the events it has not received and, from a reader with a
// DebugState() string method, its own account (positions against stop
// offsets, buffers).
package sourcetest
