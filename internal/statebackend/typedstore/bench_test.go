package typedstore

import (
	"encoding/binary"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// BenchmarkTableRMW is the table alone under the statebackend benchmark's
// access pattern: what the state API and its interfaces add shows as the
// difference from BenchmarkValueRMW/hashmap. The store draws on a Memory,
// as a TaskManager's do: an int64 value holds no pointers, so nothing is
// measured per record; a string value is measured at each write's settle.
func BenchmarkTableRMW(b *testing.B) {
	b.Run("int64", func(b *testing.B) {
		benchRMW(b, func(v int64, _ int) int64 { return v + 1 })
	})
	strs := [...]string{"a", strings.Repeat("b", 20), strings.Repeat("c", 100)}
	b.Run("string", func(b *testing.B) {
		benchRMW(b, func(_ string, i int) string { return strs[i%len(strs)] })
	})
}

func benchRMW[V any](b *testing.B, next func(V, int) V) {
	const n, maxPar = 10_000, 128
	s := NewStore(keygroup.Range{Start: 0, End: maxPar - 1}, maxPar, clock.NewManual(0))
	s.UseMemory(budget.New(1 << 40))
	t, err := NewTable(s, snapshot.StateMeta{Name: "c", Kind: snapshot.KindValue}, Ops[V]{Clone: func(v V) V { return v }})
	if err != nil {
		b.Fatal(err)
	}
	kgs := make([]uint16, n)
	var kb [8]byte
	for i := range int64(n) {
		kgs[i] = uint16(keygroup.ForHash(keygroup.HashInt64(i), maxPar))
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		s.SetCurrentKey(kb[:], int(kgs[i]))
		t.Insert()
	}
	step := int64(2654435761 % n)
	// cpu-ns/op is the benchmark thread's own CPU time per op: on a
	// shared machine, wall time per op also counts the time others ran.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	b.ResetTimer()
	for i, key := 0, int64(0); i < b.N; i++ {
		if key += step; key >= n {
			key -= n
		}
		binary.BigEndian.PutUint64(kb[:], uint64(key))
		s.SetCurrentKey(kb[:], int(kgs[key]))
		e := t.Lookup()
		w := t.Writable(e)
		w.Val = next(w.Val, i)
	}
	b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// threadCPU is the calling thread's user and system CPU time in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
