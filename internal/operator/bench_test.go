package operator

import (
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/tuple"
)

type pair = tuple.T2[int64, int64]

// BenchmarkWriterInt64Pairs encodes one (int64, int64) record per op into
// 32 KiB buffers of a partition whose consumer goroutine recycles every
// buffer as soon as it arrives and returns the credit.
func BenchmarkWriterInt64Pairs(b *testing.B) {
	const subs = 4
	rp := network.NewResultPartition(subs, network.NewBufferPool(4*subs, 32<<10))
	g := network.NewInputGate()
	for s := range subs {
		network.Connect(rp.Subs[s], g, 0, s, 2)
	}
	done := make(chan int)
	go func() {
		ended := 0
		for ended < subs {
			c, buf, ok := g.Poll()
			if !ok {
				<-g.Notify()
				continue
			}
			if buf.Kind == network.KindEndOfPartition {
				ended++
			}
			if !buf.IsEvent() {
				buf.Recycle()
				c.ReturnCredit()
			}
		}
		done <- ended
	}()
	var stats IOStats
	w := NewWriter(codec.MustFor[pair](), rp, func(p pair) int { return int(uint64(p.F0) % subs) }, nil, &stats)
	b.ReportAllocs()
	b.SetBytes(16)
	b.ResetTimer()
	for i := range b.N {
		w.ProcessElement(pair{F0: int64(i), F1: int64(i) * 3}, int64(i))
	}
	w.EndOfPartition()
	<-done
	b.StopTimer()
	if stats.RecordsOut != int64(b.N) {
		b.Fatalf("wrote %d records, want %d", stats.RecordsOut, b.N)
	}
}

type countingInput struct{ n, sum int64 }

func (c *countingInput) ProcessElement(v pair, ts int64) { c.n++; c.sum += v.F1 }
func (c *countingInput) ProcessWatermark(int64)          {}

// BenchmarkReaderInt64Pairs decodes one (int64, int64) record per op out of
// pre-filled 32 KiB buffers.
func BenchmarkReaderInt64Pairs(b *testing.B) {
	c := codec.MustFor[pair]()
	vals := make([]pair, 1<<16)
	for i := range vals {
		vals[i] = pair{F0: int64(i), F1: int64(i)}
	}
	bufs := encodeBuffers(c, vals, 32<<10, 64)
	in := &countingInput{}
	var stats IOStats
	r := NewReader(c, Input[pair](in), 1, &stats, "bench")
	b.ReportAllocs()
	b.SetBytes(16)
	b.ResetTimer()
	for in.n < int64(b.N) {
		for _, buf := range bufs {
			if err := r.ProcessBuffer(0, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if in.n%int64(len(vals)) != 0 {
		b.Fatalf("read %d records, not a multiple of %d", in.n, len(vals))
	}
}
