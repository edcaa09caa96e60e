package task

import (
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
)

// TestFlushStarvedKeepsPartialBuffers: a task whose output pool ran dry
// hands over its partly filled buffers only when they are all the pool has
// out (nothing else would ever come back). While a full buffer waits in a
// channel for the consumer, it waits for that one instead and keeps
// filling its partial buffers: across processes each early flush was a
// part-empty frame, a write and a credit round trip.
func TestFlushStarvedKeepsPartialBuffers(t *testing.T) {
	const size = 64 // 5 records of 12 bytes (4 of header, 8 of int64) per buffer
	// toward routes records below 100 to channel 0, the rest to channel 1.
	toward := func(v int64) int {
		if v < 100 {
			return 0
		}
		return 1
	}
	setup := func(buffers int, records ...int64) (*Task, *operator.Writer[int64], *network.BufferPool, *network.InputChannel) {
		pool := network.NewBufferPool(buffers, size)
		rp := network.NewResultPartition(2, pool)
		g := network.NewInputGate()
		c0 := network.Connect(rp.Subs[0], g, 0, 0, 4)
		network.Connect(rp.Subs[1], g, 0, 1, 4)
		w := operator.NewWriter(codec.Int64(), rp, toward, nil, &operator.IOStats{})
		for _, v := range records {
			w.ProcessElement(v, 0)
		}
		if pool.Available() || pool.InUse() != buffers || w.Held() != 2 {
			t.Fatalf("setup: pool available %t, %d in use, the writer holds %d; want a dry pool of %d, 2 of them partial", pool.Available(), pool.InUse(), w.Held(), buffers)
		}
		return &Task{writers: []operator.PartitionWriter{w}}, w, pool, c0
	}

	// Channel 0: a full buffer (delivered, in its queue) and a partial
	// one; channel 1: a partial one. The pool's 3 are out.
	tk, w, _, c0 := setup(3, 0, 1, 2, 3, 4, 5, 100)
	tk.flushStarved()
	if w.Held() != 2 || c0.Queued() != 1 {
		t.Errorf("a full buffer in a channel: after flushStarved the writer holds %d, channel 0 has %d queued; want the 2 partial buffers kept, 1 queued", w.Held(), c0.Queued())
	}

	// Without a buffer timeout nothing bounds the wait: every partial
	// buffer goes, full ones in the channels or not.
	tk, w, _, c0 = setup(3, 0, 1, 2, 3, 4, 5, 100)
	tk.spec.BufferTimeout = -1
	tk.flushStarved()
	if w.Held() != 0 || c0.Queued() != 2 {
		t.Errorf("no buffer timeout: after flushStarved the writer holds %d, channel 0 has %d queued; want both partial buffers handed over, 2 queued", w.Held(), c0.Queued())
	}

	// Only the two partial buffers are out of a pool of 2: they must go.
	tk, w, _, c0 = setup(2, 0, 100)
	tk.flushStarved()
	if w.Held() != 0 || c0.Queued() != 1 {
		t.Errorf("only partial buffers out: after flushStarved the writer holds %d, channel 0 has %d queued; want both handed over", w.Held(), c0.Queued())
	}
}
