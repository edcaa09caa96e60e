package baseline

import (
	"encoding/binary"
	"testing"

	"github.com/weirhq/weir/internal/cpumeter"
)

// MapFunc and FilterFunc stand for user functions: the loop only knows them
// through interfaces.
type MapFunc interface{ Map(v int64) int64 }

type FilterFunc interface{ Keep(v int64) bool }

type affine struct{ mul, add int64 }

//go:noinline
func (f affine) Map(v int64) int64 { return v*f.mul + f.add }

type notMultipleOf struct{ n int64 }

//go:noinline
func (f notMultipleOf) Keep(v int64) bool { return v%f.n != 0 }

// Package-level interface values, so the compiler cannot see the concrete
// types at the call sites and devirtualize them.
var (
	mapFn    MapFunc    = affine{mul: 3, add: 1}
	filterFn FilterFunc = notMultipleOf{n: 5}
	sink     int64
)

func BenchmarkHandLoopMapFilter(b *testing.B) {
	m, f := mapFn, filterFn
	n := int64(b.N)
	b.ResetTimer()
	start := cpumeter.Now()
	var sum int64
	for i := int64(0); i < n; i++ {
		v := m.Map(i)
		if f.Keep(v) {
			sum += v
		}
	}
	cpumeter.Report(b, n, start)
	sink = sum
}

const (
	bufSize     = 32 << 10
	pairSize    = 16
	consumers   = 2
	poolBuffers = 8 // bounded pool shared by the producer and both consumers
)

type buffer struct {
	data [bufSize]byte
	n    int // bytes used
}

// partition picks the consumer of key k: a multiplicative (Fibonacci) hash of
// the key, top bit.
func partition(k int64) int { return int((uint64(k) * 0x9e3779b97f4a7c15) >> 63) }

func BenchmarkHandShuffleInt64Pairs(b *testing.B) {
	n := int64(b.N)
	pool := make(chan *buffer, poolBuffers)
	for range poolBuffers {
		pool <- new(buffer)
	}
	var queues [consumers]chan *buffer
	sums := make(chan [2]int64, consumers) // (count, sum of values) per consumer
	for c := range queues {
		queues[c] = make(chan *buffer, poolBuffers)
		go func(in <-chan *buffer) {
			var count, sum int64
			for buf := range in {
				d := buf.data[:buf.n]
				for len(d) >= pairSize {
					k := int64(binary.LittleEndian.Uint64(d[0:8]))
					v := int64(binary.LittleEndian.Uint64(d[8:16]))
					sum += k ^ v
					count++
					d = d[pairSize:]
				}
				buf.n = 0
				pool <- buf
			}
			sums <- [2]int64{count, sum}
		}(queues[c])
	}
	b.ResetTimer()
	start := cpumeter.Now()

	// The write position of each open buffer lives in a local, not in the
	// buffer, so the hot loop keeps it in a register.
	var cur [consumers]*buffer
	var pos [consumers]int
	for c := range cur {
		cur[c] = <-pool
	}
	for i := int64(0); i < n; i++ {
		k, v := i, i*7
		c := partition(k)
		p := pos[c]
		d := cur[c].data[p : p+pairSize : p+pairSize]
		binary.LittleEndian.PutUint64(d[0:8], uint64(k))
		binary.LittleEndian.PutUint64(d[8:16], uint64(v))
		p += pairSize
		if p == bufSize {
			cur[c].n = p
			queues[c] <- cur[c]
			cur[c] = <-pool
			p = 0
		}
		pos[c] = p
	}
	for c, buf := range cur {
		buf.n = pos[c]
		queues[c] <- buf // possibly empty; the consumer returns it to the pool
		close(queues[c])
	}
	var count, sum int64
	for range consumers {
		s := <-sums
		count += s[0]
		sum += s[1]
	}
	cpumeter.Report(b, n, start)

	b.StopTimer()
	var want int64
	for i := int64(0); i < n; i++ {
		want += i ^ (i * 7)
	}
	if count != n || sum != want {
		b.Fatalf("consumers saw %d pairs summing to %d, want %d summing to %d", count, sum, n, want)
	}
}

// TestShufflePartitionBalanced keeps the shuffle benchmark honest: both
// consumers get about half of the keys.
func TestShufflePartitionBalanced(t *testing.T) {
	var counts [consumers]int
	for k := int64(0); k < 1<<16; k++ {
		counts[partition(k)]++
	}
	for c, n := range counts {
		if n < (1<<16)*45/100 || n > (1<<16)*55/100 {
			t.Fatalf("consumer %d gets %d of %d keys", c, n, 1<<16)
		}
	}
}
