//go:build unix

package cpumeter

import (
	"syscall"
	"testing"
	"time"
)

// Sample is the process's cumulative CPU time and the wall clock at one
// instant.
type Sample struct {
	User, Sys time.Duration // CPU time of all threads of the process so far
	Wall      time.Time     // when the sample was taken (carries a monotonic reading)
}

// Now samples the process's CPU time and the wall clock.
func Now() Sample {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		// RUSAGE_SELF with a valid pointer cannot fail on Linux.
		panic("cpumeter: getrusage: " + err.Error())
	}
	return Sample{
		User: time.Duration(ru.Utime.Nano()),
		Sys:  time.Duration(ru.Stime.Nano()),
		Wall: time.Now(),
	}
}

// CPU is the sample's total (user + system) CPU time.
func (s Sample) CPU() time.Duration { return s.User + s.Sys }

// Since returns the CPU time and wall time that passed between start and s,
// as in cpumeter.Now().Since(start).
func (s Sample) Since(start Sample) (cpu, wall time.Duration) {
	return s.CPU() - start.CPU(), s.Wall.Sub(start.Wall)
}

// Report takes a sample now and reports, on b, the throughput per CPU core
// since start ("events/s/core" = events / CPU seconds) and the average number
// of cores kept busy ("cores" = CPU time / wall time). Call it right after the
// measured work, with start taken right before it (after b.ResetTimer).
//
// getrusage has a resolution of about a scheduler tick on some kernels, so run
// the benchmark for at least several hundred milliseconds (-benchtime).
func Report(b *testing.B, events int64, start Sample) {
	b.Helper()
	cpu, wall := Now().Since(start)
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/s/core")
	}
	if wall > 0 {
		b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
	}
}
