package weir_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// heapInUse returns the bytes of heap spans in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// A job's network memory follows the data in flight, not the number of
// channels: a keyed job at high parallelism with a trickle of data must not
// allocate a buffer pool per channel up front (n*(2n+8) buffers of 32 KiB
// would be 1 GiB at parallelism 128).
func TestNetworkMemoryFollowsDataNotChannels(t *testing.T) {
	p := 128
	if testing.Short() {
		p = 64
	}
	before := heapInUse()
	env := weir.NewEnvironment(weir.Config{Parallelism: p})
	src := weir.Generate(env, -1, 200, func(i int64) int64 { return i })
	counts := weir.Reduce(weir.KeyBy(src, func(v int64) int64 { return v % 1000 }), func(a, b int64) int64 { return a + b })
	weir.Discard(counts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "trickle")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	during := heapInUse()
	maxInUse, allocated, capacity := job.NetworkBuffers()
	cancel()
	<-job.Done()
	grown := during - before
	t.Logf("parallelism %d: heap grew %d MiB while running; network buffers allocated %d KiB, at most %d KiB in use, pools may grow to %d MiB",
		p, grown>>20, allocated>>10, maxInUse>>10, capacity>>20)
	// Unbounded preallocation would be p*(2p+8) buffers of 32 KiB: 272 MiB
	// at 64, 1 GiB at 128. 200 records a second touch a few dozen buffers.
	if allocated > 16<<20 {
		t.Errorf("%d MiB of network buffers allocated for a trickle of data", allocated>>20)
	}
	if grown > 128<<20 {
		t.Errorf("the heap grew by %d MiB for a job with a trickle of data", grown>>20)
	}
}

// A job whose channels need more buffers than the network memory budget
// fails at once, before anything runs, saying what it needs and which
// setting to change.
func TestNetworkMemoryTooSmallFailsAtOnce(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 64, NetworkMemory: 8 << 20})
	src := weir.Generate(env, -1, 0, func(i int64) int64 { return i })
	weir.Discard(weir.Reduce(weir.KeyBy(src, func(v int64) int64 { return v }), func(a, b int64) int64 { return a + b }))
	start := time.Now()
	job, err := env.ExecuteAsync(context.Background(), "too-wide")
	if err == nil {
		job.Cancel()
		<-job.Done()
		t.Fatal("a job needing 128 MiB of network buffers started with 8 MiB")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("failing took %v", d)
	}
	// 64 producers with 64 channels each, and the keyed operators' one
	// channel each to the sink chain: 64*64 + 0 (chained) buffers of 32 KiB.
	for _, want := range []string{"not enough network memory", "needs 128 MiB", "4096 output channels", "network memory is 8 MiB", "taskmanager.memory.network.max", "--network-memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
