// Package operator is the typed layer of the runtime: the interfaces records
// flow through inside a chain (Input), the lifecycle every operator instance
// has, the per-subtask Context, and the typed glue that turns records into
// framed bytes on a network edge (Writer) and back (Reader).
//
// Records travel as typed values with their timestamp beside them, never as
// `any`. The task runtime (internal/task) is type-erased and reaches this
// package through the Factory and StreamType interfaces, which are created
// once per operator and stream type when the graph is built.
//
// It also owns the subtask's counters: IOStats (records, bytes, times,
// watermarks, the output's idle status) and the operators' own metrics
// (Counter, registered through Context.Counter). Both are plain fields the
// task goroutine updates without atomics, published to atomics for other
// goroutines by IOStats.Publish.
//
// Failure model: operators do not return errors per record. A user function
// error or panic unwinds the chain as a panic; the task recovers it once, at
// its loop, and Context.Current tells it which operator was running.
package operator
