// Package crashpoint kills the process at named points of a protocol, for
// tests that prove a protocol survives a crash in each of its windows (the
// Kafka sink's two-phase commit: before the barrier, after pre-commit,
// after the checkpoint completes and before the commit, after the commit).
//
// A point does nothing unless the environment variable WEIR_CRASH_AT names
// it: WEIR_CRASH_AT=NAME kills the process with SIGKILL the first time the
// point is reached, WEIR_CRASH_AT=NAME:N the N-th time. Nothing is flushed
// or closed on the way out, as in a real crash. Points are cheap when unset
// (one atomic load), but they are still kept off per-record paths.
//
// Connectors do not import this package (they use only public packages):
// the Kafka sink calls its SinkConfig.CrashHook at its points, and the weir
// command (internal/cli) sets that hook to Hit for kafka-keyed-count.
package crashpoint
