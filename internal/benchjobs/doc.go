// Package benchjobs holds the engine benchmarks as jobs, so that `go test
// -bench` (bench_test.go) and `weir bench` run exactly the same code. Each
// returns the number of events it processed; the caller measures CPU time.
package benchjobs
