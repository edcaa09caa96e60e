// Package benchjobs holds the engine benchmarks as jobs, so that `go test
// -bench` (bench_test.go) and `weir bench` run exactly the same code. Each
// returns the number of events it processed; the caller measures CPU time.
// Savepoint (savepoint.go, `weir bench savepoint`) is the exception: it runs
// several jobs in phases (load, savepoint, restores, verification) and
// measures each phase itself. Shuffle and KeyedLatency also run on a
// multi-process cluster (`weir bench shuffle|latency --jobmanager`); there
// KeyedLatency's subtasks write their results to files (LatencyOptions.StatsDir)
// that ReadLatencyStats merges.
package benchjobs
