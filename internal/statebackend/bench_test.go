package statebackend

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/state"
)

const benchMaxPar = 128

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("%s=%q: %v", name, v, err))
		}
		return n
	}
	return def
}

func newBench(b *testing.B, kind string) Keyed {
	// WEIR_BENCH_PEBBLE_MB scales Pebble's memory: block cache = MB,
	// memtable and write-back cache = MB/4 each (default: the backend's defaults).
	var po PebbleOptions
	if mb := envInt("WEIR_BENCH_PEBBLE_MB", 0); mb > 0 {
		po = PebbleOptions{CacheBytes: mb << 20, MemTableBytes: mb << 18, WriteCacheBytes: mb << 18}
	}
	k, err := New(Config{Kind: kind, Dir: b.TempDir(), MaxParallelism: benchMaxPar,
		Range: keygroup.Range{Start: 0, End: benchMaxPar - 1}, Clock: clock.NewManual(0), Pebble: po})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	return k
}

// setKey makes int64 key i current, as the runtime would: encoded bytes and key group.
func setKey(k Keyed, buf *[8]byte, i int64) {
	binary.BigEndian.PutUint64(buf[:], uint64(i))
	k.SetCurrentKey(buf[:], keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar))
}

// keyGroups precomputes the key group of keys 0..n-1: in the engine the
// partitioner has computed it already, so the benchmark leaves out its cost
// (a murmur hash and a division, about 25 ns).
func keyGroups(n int64) []uint16 {
	kgs := make([]uint16, n)
	for i := range n {
		kgs[i] = uint16(keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar))
	}
	return kgs
}

// keyStep is the step through keys 0..n-1 that visits each once per n
// steps, scattered: a large stride (coprime to the key counts used here)
// modulo n. The loops add it modulo n without a division, which would cost
// more than a state access.
func keyStep(n int64) int64 { return 2654435761 % n }

// BenchmarkValueRMW is the per-record cost of a keyed counter: Value, then
// Update(n+1), on keys visited in a scattered order. ops/s/core divides by
// the process CPU time, so background work (Pebble compactions, GC) counts.
// WEIR_BENCH_SMALL_KEYS and WEIR_BENCH_BIG_KEYS change the two key counts.
func BenchmarkValueRMW(b *testing.B) {
	for _, kind := range []string{KindHashMap, KindPebble} {
		for _, n := range []int64{envInt("WEIR_BENCH_SMALL_KEYS", 10_000), envInt("WEIR_BENCH_BIG_KEYS", 10_000_000)} {
			b.Run(fmt.Sprintf("%s/keys=%d", kind, n), func(b *testing.B) {
				k := newBench(b, kind)
				v := state.GetValueState(k, state.ValueDescriptor[int64]{Name: "count", Codec: codec.Int64()})
				var kb [8]byte
				for i := range n {
					setKey(k, &kb, i)
					v.Update(0)
				}
				runtime.GC()
				kgs := keyGroups(n)
				cpu0, wall0 := cpuSeconds(), time.Now()
				b.ResetTimer()
				step := keyStep(n)
				for i, key := 0, int64(0); i < b.N; i++ {
					if key += step; key >= n {
						key -= n
					}
					binary.BigEndian.PutUint64(kb[:], uint64(key))
					k.SetCurrentKey(kb[:], int(kgs[key]))
					c, _ := v.Value()
					v.Update(c + 1)
				}
				b.StopTimer()
				cpu := cpuSeconds() - cpu0
				b.ReportMetric(float64(b.N)/cpu, "ops/s/core")
				b.ReportMetric(cpu/time.Since(wall0).Seconds(), "cores")
			})
		}
	}
}

// BenchmarkSnapshot measures a canonical snapshot of WEIR_BENCH_SNAPSHOT_MB
// (default 64) of value state (100-byte values): the synchronous part on the
// task goroutine, and materializing to a file; and for Pebble, a native
// checkpoint.
func BenchmarkSnapshot(b *testing.B) {
	mb := envInt("WEIR_BENCH_SNAPSHOT_MB", 64)
	const valSize = 100
	n := mb << 20 / (valSize + 8)
	for _, kind := range []string{KindHashMap, KindPebble} {
		b.Run(fmt.Sprintf("%s/MB=%d", kind, mb), func(b *testing.B) {
			k := newBench(b, kind)
			v := state.GetValueState(k, state.ValueDescriptor[[]byte]{Name: "blob", Codec: codec.Bytes()})
			val := make([]byte, valSize)
			var kb [8]byte
			for i := range n {
				setKey(k, &kb, i)
				binary.BigEndian.PutUint64(val, uint64(i))
				v.Update(append([]byte(nil), val...))
			}
			dir := b.TempDir()
			b.ResetTimer()
			var syncTime, total time.Duration
			var size int64
			for i := range b.N {
				t0 := time.Now()
				p, err := k.Snapshot(int64(i), Canonical)
				if err != nil {
					b.Fatal(err)
				}
				syncTime += time.Since(t0)
				f, err := os.Create(filepath.Join(dir, "snap"))
				if err != nil {
					b.Fatal(err)
				}
				h, err := p.Materialize(f)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
				total += time.Since(t0)
				size = h.Size
			}
			b.ReportMetric(float64(syncTime.Microseconds())/float64(b.N), "sync-µs")
			b.ReportMetric(total.Seconds()/float64(b.N), "total-s")
			b.ReportMetric(float64(size)/(1<<20), "snapshot-MB")
			if kind == KindHashMap {
				b.ReportMetric(firstWritePause(b, k, v, n), "max-first-write-ms")
			}
			if kind == KindPebble {
				t0 := time.Now()
				p, err := k.Snapshot(1000, Native)
				if err != nil {
					b.Fatal(err)
				}
				sync := time.Since(t0)
				h, err := p.Materialize(nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(sync.Microseconds()), "native-sync-µs")
				b.ReportMetric(float64(h.Size)/(1<<20), "native-MB")
				os.RemoveAll(h.Dir)
			}
		})
	}
}

// firstWritePause takes a snapshot and then writes one existing key in
// every key group, as records would after a checkpoint: the first write to
// a key group copies its table (copy-on-write). It returns the longest of
// those writes in milliseconds, the pause a record can see.
func firstWritePause(b *testing.B, k Keyed, v state.ValueState[[]byte], n int64) float64 {
	p, err := k.Snapshot(1<<40, Canonical)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Release()
	var kb [8]byte
	var longest time.Duration
	var all []time.Duration
	seen := make([]bool, benchMaxPar)
	for i, left := int64(0), benchMaxPar; i < n && left > 0; i++ {
		kg := keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar)
		if seen[kg] {
			continue
		}
		seen[kg], left = true, left-1
		setKey(k, &kb, i)
		t0 := time.Now()
		old, _ := v.Value()
		v.Update(old[:len(old):len(old)])
		longest = max(longest, time.Since(t0))
		all = append(all, time.Since(t0))
	}
	slices.Sort(all)
	b.Logf("first writes: median %v, p90 %v, max %v", all[len(all)/2], all[len(all)*9/10], longest)
	return float64(longest.Microseconds()) / 1000
}

// BenchmarkGoMapBaseline is the ceiling of the heap backend's previous
// design, Go maps keyed by string: the same scattered key order over 128
// per-key-group maps, with nothing but a lookup and an increment per op (no
// state API, no key switching).
func BenchmarkGoMapBaseline(b *testing.B) {
	const n = 10_000
	type entry struct{ v, _ int64 } // value and TTL time, as that design's entries had
	kgs := keyGroups(n)
	maps := make([]map[string]*entry, benchMaxPar)
	for i := range maps {
		maps[i] = map[string]*entry{}
	}
	var kb [9]byte
	kb[0] = 8
	for i := range int64(n) {
		binary.BigEndian.PutUint64(kb[1:], uint64(i))
		maps[kgs[i]][string(kb[:])] = &entry{}
	}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	step := keyStep(n)
	for i, key := 0, int64(0); i < b.N; i++ {
		if key += step; key >= n {
			key -= n
		}
		binary.BigEndian.PutUint64(kb[1:], uint64(key))
		maps[kgs[key]][string(kb[:])].v++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/(cpuSeconds()-cpu0), "ops/s/core")
}
