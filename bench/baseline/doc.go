// Package baseline holds hand-written Go programs that do, as directly as Go
// allows, the work the engine's benchmarks do through the engine. They are
// reference points, not engine code: nothing in the engine imports this
// package, and the engine's figures are read against these (how far from a
// careful hand-written loop is the engine?).
//
// Every benchmark counts one event per record (b.N records) and reports, via
// internal/cpumeter, "events/s/core" (records per second of process CPU time,
// all goroutines and the GC included) and "cores" (CPU time / wall time).
//
//   - BenchmarkHandLoopMapFilter: one goroutine generates int64 records,
//     passes each through a map function and a filter function called through
//     interfaces (so neither can be inlined, as with a user's function in the
//     engine) and sums the survivors into a sink.
//   - BenchmarkHandShuffleInt64Pairs: one producer goroutine encodes
//     (int64, int64) pairs, 16 bytes each, little-endian, into 32 KiB buffers
//     taken from a bounded pool, partitioned by a hash of the first field
//     between two consumer goroutines, which decode every pair, sum it and
//     return the buffer to the pool.
//
// Run with: go test ./bench/baseline -bench . -benchtime=2s -count=3
package baseline
