// Package cpumeter measures the CPU time the whole process spends, so that
// benchmarks can report throughput per core ("events/s/core") rather than per
// wall-clock second. A pipeline that keeps two cores busy to do what another
// does on one is not faster, and ns/op alone cannot tell the two apart.
//
// CPU time is the process's user plus system time from getrusage(RUSAGE_SELF):
// it covers every goroutine, the garbage collector and the runtime, not just
// the benchmark goroutine. It is meant for Linux; other Unix systems work too.
package cpumeter
