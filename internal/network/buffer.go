package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
)

// Kind says what a buffer holds.
type Kind uint8

const (
	// KindData holds framed records.
	KindData Kind = iota
	// KindWatermark holds one event-time watermark (8 bytes, little-endian).
	KindWatermark
	// KindEndOfPartition says the producer will send nothing more on this channel.
	KindEndOfPartition
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindWatermark:
		return "watermark"
	case KindEndOfPartition:
		return "end-of-partition"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Buffer is a fixed-capacity byte buffer that belongs to a pool. Exactly one
// goroutine owns a buffer at a time: the producer while filling it, the
// channel while it is queued, the consumer until it calls Recycle.
type Buffer struct {
	// Data holds the bytes written so far; cap(Data) is the pool's buffer size.
	Data []byte
	Kind Kind
	pool *BufferPool
	// pooled is true while the buffer sits in its pool's free list; it makes
	// a second Recycle panic even when the free list has room for it.
	pooled atomic.Bool
}

// Recycle returns the buffer to its pool. The buffer must not be used
// afterwards; recycling it twice panics.
func (b *Buffer) Recycle() {
	if !b.pooled.CompareAndSwap(false, true) {
		panic("network: buffer recycled twice")
	}
	b.Data = b.Data[:0]
	b.Kind = KindData
	b.pool.put(b)
}

// Watermark decodes the watermark of a KindWatermark buffer.
func (b *Buffer) Watermark() int64 { return int64(binary.LittleEndian.Uint64(b.Data)) }

// ErrCanceled is returned by blocking calls when the task is canceled.
var ErrCanceled = errors.New("network: canceled")

// BufferPool is a bounded set of equally sized buffers. It never grows: when
// every buffer is out, Request blocks until one is recycled. That block is
// where backpressure reaches a producer.
type BufferPool struct {
	size  int
	total int
	free  chan *Buffer
	// inUse counts buffers out of the pool; maxInUse is its high-water mark.
	inUse, maxInUse atomic.Int64
}

// NewBufferPool allocates n buffers of size bytes each.
func NewBufferPool(n, size int) *BufferPool {
	if n < 1 || size < 64 {
		panic(fmt.Sprintf("network: pool of %d buffers of %d bytes is too small", n, size))
	}
	p := &BufferPool{size: size, total: n, free: make(chan *Buffer, n)}
	for range n {
		b := &Buffer{Data: make([]byte, 0, size), pool: p}
		b.pooled.Store(true)
		p.free <- b
	}
	return p
}

// BufferSize is the capacity of each buffer.
func (p *BufferPool) BufferSize() int { return p.size }

// Capacity is the number of buffers in the pool.
func (p *BufferPool) Capacity() int { return p.total }

// InUse is the number of buffers currently out of the pool.
func (p *BufferPool) InUse() int { return int(p.inUse.Load()) }

// MaxInUse is the largest number of buffers that were ever out at once.
func (p *BufferPool) MaxInUse() int { return int(p.maxInUse.Load()) }

// TryRequest returns a free buffer, or nil if none is free.
func (p *BufferPool) TryRequest() *Buffer {
	select {
	case b := <-p.free:
		p.took(b)
		return b
	default:
		return nil
	}
}

// Request returns a free buffer, blocking until one is recycled or cancel is
// closed (then it returns ErrCanceled).
func (p *BufferPool) Request(cancel <-chan struct{}) (*Buffer, error) {
	select {
	case b := <-p.free:
		p.took(b)
		return b, nil
	default:
	}
	select {
	case b := <-p.free:
		p.took(b)
		return b, nil
	case <-cancel:
		return nil, ErrCanceled
	}
}

func (p *BufferPool) took(b *Buffer) {
	b.pooled.Store(false)
	n := p.inUse.Add(1)
	for {
		m := p.maxInUse.Load()
		if n <= m || p.maxInUse.CompareAndSwap(m, n) {
			return
		}
	}
}

func (p *BufferPool) put(b *Buffer) {
	p.inUse.Add(-1)
	select {
	case p.free <- b:
	default:
		panic("network: buffer recycled twice or into a foreign pool")
	}
}
