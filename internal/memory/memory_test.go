package memory

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// Detect on golden file trees (testdata/NAME is the root of a machine's
// /proc and /sys): the process's own cgroup before the root, v2 before
// v1, "max" and v1's near-2^63 meaning none, a limit above the machine's
// memory giving the machine's memory, and nothing known giving 0.
func TestDetectGolden(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		root  string
		bytes int64
		from  string
	}{
		{"v2-limited", 256 << 20, "/sys/fs/cgroup/memory.max"},
		{"v2-own-cgroup", gib, "/sys/fs/cgroup/user.slice/job.scope/memory.max"},
		{"v2-max", 16384000 << 10, "/proc/meminfo MemTotal"},
		{"v1-unlimited", 24683784 << 10, "/proc/meminfo MemTotal"},
		{"v1-limited", 512 << 20, "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"cgroup-above-machine", 16384000 << 10, "/proc/meminfo MemTotal"},
		{"garbage", 16384000 << 10, "/proc/meminfo MemTotal"},
		{"none-limited", 300000000, "/sys/fs/cgroup/memory.max"},
		{"nothing", 0, ""},
	} {
		t.Run(tc.root, func(t *testing.T) {
			root := filepath.Join("testdata", tc.root)
			got := detect(func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, p)) })
			if got.Bytes != tc.bytes || got.From != tc.from {
				t.Fatalf("detect = %d from %q, want %d from %q", got.Bytes, got.From, tc.bytes, tc.from)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"max\n", 0, false}, {"268435456\n", 268435456, true}, {"9223372036854771712\n", 0, false},
		{"18446744073709551615", 0, false}, {"0\n", 0, false}, {"-1\n", 0, false}, {"", 0, false}, {"12 kB", 0, false},
	} {
		if n, ok := ParseCgroupLimit([]byte(tc.in)); n != tc.n || ok != tc.ok {
			t.Errorf("ParseCgroupLimit(%q) = %d, %t; want %d, %t", tc.in, n, ok, tc.n, tc.ok)
		}
	}
	if n, ok := ParseMemTotal([]byte("MemFree: 5 kB\nMemTotal:   1024 kB\n")); n != 1<<20 || !ok {
		t.Errorf("ParseMemTotal = %d, %t; want 1 MiB", n, ok)
	}
	if _, ok := ParseMemTotal([]byte("MemFree: 5 kB\n")); ok {
		t.Error("ParseMemTotal found a MemTotal where there is none")
	}
	v2, v1 := ParseSelfCgroup([]byte("12:memory:/a/b\n1:cpu,cpuacct:/c\n0::/d/e\n"))
	if v2 != "/d/e" || v1 != "/a/b" {
		t.Errorf("ParseSelfCgroup = %q, %q", v2, v1)
	}
	if _, v1 := ParseSelfCgroup([]byte("3:cpu,memory:/x\n")); v1 != "/x" {
		t.Errorf("a memory controller mounted with another: %q", v1)
	}
}

// The division of the process memory (Flink's fractions for network, 0.1
// up to a cap, and managed memory, 0.4).
func TestDivision(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ p, soft, guard, net, heap int64 }{
		{256 * mib, 256 * mib / 100 * 90, 256 * mib / 100 * 80, 256 * mib / 100 * 10, 256 * mib / 100 * 40},
		{1000 * mib, 900 * mib, 800 * mib, 100 * mib, 400 * mib},
		{100 << 30, 90 << 30, 80 << 30, 4 << 30, 40 << 30}, // network capped at 4 GiB
	} {
		if s, g, n, h := SoftLimit(tc.p), GuardBound(tc.p), NetworkDefault(tc.p), HeapStateDefault(tc.p); s != tc.soft || g != tc.guard || n != tc.net || h != tc.heap {
			t.Errorf("P=%d: soft %d guard %d network %d heap %d; want %d %d %d %d", tc.p, s, g, n, h, tc.soft, tc.guard, tc.net, tc.heap)
		}
	}
}

// The guard's rule on a trace of samples: it fires only when every sample
// from the first above the bound to one two collections later is above it.
func TestWatchTrace(t *testing.T) {
	type step struct {
		live   int64
		cycles uint64
		fire   bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"under", []step{{50, 1, false}, {100, 5, false}, {100, 9, false}}},
		{"one-cycle spike", []step{{150, 1, false}, {150, 2, false}, {90, 3, false}, {150, 4, false}, {150, 5, false}, {50, 6, false}}},
		{"no new collection", []step{{150, 1, false}, {150, 1, false}, {150, 1, false}, {150, 2, false}}},
		{"persists", []step{{150, 1, false}, {160, 2, false}, {170, 3, true}}},
		{"jumps two cycles", []step{{90, 1, false}, {150, 2, false}, {150, 4, true}}},
		{"dip resets", []step{{150, 1, false}, {150, 2, false}, {100, 2, false}, {150, 3, false}, {150, 4, false}, {150, 5, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Watch{Bound: 100}
			for i, s := range tc.steps {
				if got := w.Observe(Sample{LiveHeap: s.live, Cycles: s.cycles}); got != s.fire {
					t.Fatalf("step %d (%d live, cycle %d): fire %t, want %t", i, s.live, s.cycles, got, s.fire)
				}
			}
		})
	}
	// Stacks count with the heap.
	w := &Watch{Bound: 100}
	for c := range uint64(3) {
		if w.Observe(Sample{LiveHeap: 60, Stacks: 60, Cycles: c}) != (c == 2) {
			t.Fatalf("heap 60 + stacks 60 over a bound of 100, cycle %d", c)
		}
	}
}

// Jobs lower the soft limit to the smallest of theirs while they run and
// the last to end restores the limit found before the first.
func TestSetSoftLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(1 << 40)
	a := SetSoftLimit(2 << 30)
	if got := debug.SetMemoryLimit(-1); got != 2<<30 {
		t.Fatalf("one job: limit %d", got)
	}
	b := SetSoftLimit(1 << 30)
	a()
	a() // twice is once
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("after the first ended: limit %d, want the second's", got)
	}
	b()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Fatalf("after both ended: limit %d, want the one from before", got)
	}
	debug.SetMemoryLimit(1 << 20)
	c := SetSoftLimit(1 << 30) // never above a limit set before
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Fatalf("under a lower limit set before: %d", got)
	}
	c()
}

// Run fires once with the sample that fired and stops; closing stop ends it.
func TestRun(t *testing.T) {
	var cycles uint64
	read := func() Sample { cycles++; return Sample{LiveHeap: 200, Cycles: cycles} }
	var fired []Sample
	Run(make(chan struct{}), 1, &Watch{Bound: 100}, read, func(s Sample) { fired = append(fired, s) })
	if len(fired) != 1 || fired[0].Cycles != 3 {
		t.Fatalf("fired %v, want once at cycle 3", fired)
	}
	stop := make(chan struct{})
	close(stop)
	Run(stop, 1, &Watch{Bound: 100}, func() Sample { return Sample{} }, func(Sample) { t.Fatal("fired under the bound") })
	runtime.GC() // the live heap is measured by a collection
	r := NewReader()
	if s := r.Read(); s.LiveHeap <= 0 || s.Stacks <= 0 {
		t.Fatalf("Read = %+v: the runtime's metrics are missing", s)
	}
}

// A Reader allocates nothing per sample: the guard samples every Interval
// and after every collection for the life of the job.
func TestReaderReusesSamples(t *testing.T) {
	r := NewReader()
	if n := testing.AllocsPerRun(100, func() { r.Read() }); n != 0 {
		t.Fatalf("Read allocates %v times a sample, want 0", n)
	}
}
