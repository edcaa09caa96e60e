package weir_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/sink"
	"go.uber.org/goleak"
)

// slowSink consumes a record every few microseconds and counts them.
type slowSink struct{ consumed *atomic.Int64 }

func (s slowSink) CreateWriter(sink.Context) (sink.Writer[int64], error) {
	return &slowWriter{s.consumed}, nil
}

type slowWriter struct{ consumed *atomic.Int64 }

func (w *slowWriter) Write(int64, int64) error {
	if w.consumed.Add(1)%64 == 0 {
		time.Sleep(time.Millisecond)
	}
	return nil
}
func (w *slowWriter) Flush(bool) error { return nil }
func (w *slowWriter) Close() error     { return nil }

// A slow sink must slow its sources down, and buffered data must stay within
// the configured network buffer pools.
func TestSlowSinkBackpressuresWithBoundedMemory(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	const bufferSize = 4096
	var produced, consumed atomic.Int64
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, BufferSize: bufferSize, BuffersPerChannel: 2, FloatingBuffers: 4})
	src := weir.Generate(env, -1, 0, func(i int64) int64 { produced.Add(1); return i })
	mapped := weir.Map(src.Rebalance(), func(v int64) int64 { return v * 2 }).Name("Double")
	weir.SinkTo[int64](mapped.Rebalance(), slowSink{&consumed}, "Slow")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "backpressure")
	if err != nil {
		t.Fatal(err)
	}
	// Each record is an 8-byte payload plus a 4-byte header.
	const recordBytes = 12
	var lastProduced int64
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		p, c := produced.Load(), consumed.Load()
		maxInUse, _, capacity := job.NetworkBuffers()
		if maxInUse > capacity {
			t.Fatalf("buffers in use %d bytes exceed the pools' %d bytes", maxInUse, capacity)
		}
		// Records between source and sink: in network buffers, plus one
		// source batch per subtask being emitted into the chain.
		inFlight := p - c
		bound := capacity/recordBytes + 2*1024*2
		if inFlight > bound {
			t.Fatalf("%d records in flight (produced %d, consumed %d) exceed what the pools hold (%d)", inFlight, p, c, bound)
		}
		lastProduced = p
	}
	maxInUse, _, capacity := job.NetworkBuffers()
	t.Logf("produced %d, consumed %d; network buffers: at most %d of %d bytes in use", lastProduced, consumed.Load(), maxInUse, capacity)
	// Unthrottled, the generator makes tens of millions of records a second;
	// the slow sink takes at most 64 per millisecond.
	if lastProduced > 2_000_000 {
		t.Fatalf("the sources were not slowed down: %d records produced in 1s", lastProduced)
	}
	if maxInUse < capacity/4 {
		t.Errorf("buffers in use peaked at %d of %d bytes; backpressure should fill the pools", maxInUse, capacity)
	}
	job.Cancel()
	if _, err := job.Wait(context.Background()); err == nil {
		t.Fatal("a canceled job must report an error")
	}
}
