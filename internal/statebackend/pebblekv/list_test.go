package pebblekv

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
)

const testMaxPar = 128

func openTest(tb testing.TB, dir string) *DB {
	tb.Helper()
	d, err := Open(dir, Options{}, keygroup.Range{Start: 0, End: testMaxPar - 1}, testMaxPar, clock.NewManual(0))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func listTable(tb testing.TB, d *DB, name string) *Table {
	tb.Helper()
	t, err := d.Table(snapshot.StateMeta{Name: name, Kind: snapshot.KindList}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// setTestKey makes int64 key i current.
func setTestKey(d *DB, i int64) {
	var kb [8]byte
	binary.BigEndian.PutUint64(kb[:], uint64(i))
	d.SetCurrentKey(kb[:], int(i%testMaxPar))
}

// BenchmarkListAppendRead appends n single 8-byte elements to one key's
// list (one Pebble merge operand each) and reads the list once: the cost of
// a list built element by element, as a window's or a join's buffer is.
// Each iteration uses a new key. "memtable" reads the operands from the
// memtable; "flushed" flushes them first (the flush merges them into one
// value) and then reads. ns/elem should not grow with n.
func BenchmarkListAppendRead(b *testing.B) {
	for _, where := range []string{"memtable", "flushed"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/n=%d", where, n), func(b *testing.B) {
				d := openTest(b, b.TempDir())
				defer d.Close()
				t := listTable(b, d, "l")
				var elem [8]byte
				cpu0 := cpuNanos()
				b.ResetTimer()
				for i := range b.N {
					setTestKey(d, int64(i))
					for j := range n {
						binary.BigEndian.PutUint64(elem[:], uint64(j))
						if err := t.Append(elem[:], 0); err != nil {
							b.Fatal(err)
						}
					}
					if where == "flushed" {
						if err := d.db.Flush(); err != nil {
							b.Fatal(err)
						}
					}
					got := 0
					if err := t.ScanList(func([]byte, int64) bool { got++; return true }); err != nil {
						b.Fatal(err)
					}
					if got != n {
						b.Fatalf("read %d elements, appended %d", got, n)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
				b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N*n), "cpu-ns/elem")
			})
		}
	}
}

// cpuNanos is the process's user+system CPU time (the machine may be shared:
// CPU time is steadier than wall time; it includes Pebble's background work).
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
