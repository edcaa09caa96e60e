// Package memory owns the whole-process memory budget (Flink's
// taskmanager.memory.process.size): where its default comes from (the
// cgroup's limit, else the machine's memory), how it is divided among the
// Go runtime's soft limit, network buffers and heap state, and the guard
// that fails a job whose live heap stays above its share of it.
//
// The guard's rule is a pure state machine (Watch) fed with samples of
// runtime/metrics; Run is the goroutine that samples and calls it.
//
// FormatBytes renders byte counts in messages about memory ("32 KiB"),
// for the runtime and the JobManager alike: this package imports only the
// standard library.
package memory
