//go:build unix

package cpumeter

import (
	"runtime"
	"testing"
	"time"
)

var sink uint64

// spin burns CPU on the calling goroutine for at least d of wall time.
func spin(d time.Duration) {
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink += x
}

func TestSinceMeasuresBusyCPU(t *testing.T) {
	// Spin until 100ms of CPU time are measured. On a loaded machine one
	// goroutine may get far less than a core, so wall time is only a deadline;
	// the test fails if busy CPU is not counted at all.
	start := Now()
	for {
		spin(20 * time.Millisecond)
		cpu, wall := Now().Since(start)
		if cpu >= 100*time.Millisecond {
			if cpu > wall+100*time.Millisecond {
				t.Fatalf("cpu = %v exceeds wall %v for one goroutine", cpu, wall)
			}
			return
		}
		if wall > 20*time.Second {
			t.Fatalf("after %v of spinning only %v of CPU was measured", wall, cpu)
		}
	}
}

func TestSinceIgnoresSleep(t *testing.T) {
	start := Now()
	time.Sleep(200 * time.Millisecond)
	cpu, wall := Now().Since(start)
	if wall < 200*time.Millisecond {
		t.Fatalf("wall = %v, want >= 200ms", wall)
	}
	if cpu > 100*time.Millisecond {
		t.Fatalf("cpu = %v while sleeping %v", cpu, wall)
	}
}

// work burns a fixed amount of CPU: 100 M dependent multiply-adds, some
// 400 M cycles (80-150 ms on any current core), however busy the machine
// is (a wall-clock spin gets less CPU the busier it is).
func work() {
	x := uint64(1)
	for i := 0; i < 100_000_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink += x
}

func TestSinceCountsOtherThreads(t *testing.T) {
	// The work happens on another OS thread while this goroutine blocks: the
	// process-wide measure must still see it. (It spun 200 ms of wall time
	// once and failed on a loaded machine, where that thread got less than
	// a quarter of a core.)
	start := Now()
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		work()
		close(done)
	}()
	<-done
	cpu, wall := Now().Since(start)
	if cpu < 30*time.Millisecond {
		t.Fatalf("cpu = %v (wall %v) for a goroutine doing 400 M cycles of work on another thread", cpu, wall)
	}
}

func TestSampleMonotonic(t *testing.T) {
	a := Now()
	spin(10 * time.Millisecond)
	b := Now()
	if b.User < a.User || b.Sys < a.Sys || b.Wall.Before(a.Wall) {
		t.Fatalf("samples went backwards: %+v then %+v", a, b)
	}
}

func BenchmarkReport(b *testing.B) {
	start := Now()
	x := uint64(1)
	for i := 0; i < b.N; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink += x
	Report(b, int64(b.N), start)
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		_ = Now()
	}
}
