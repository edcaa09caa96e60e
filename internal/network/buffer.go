package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weirhq/weir/internal/memory"
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
	// KindBarrier is a checkpoint barrier (see Barrier).
	KindBarrier
	// KindCancelCheckpoint says a checkpoint was given up (8-byte id).
	KindCancelCheckpoint
	// KindEndOfData says the producer will send no more records (it may
	// still send barriers until its final checkpoint; FLIP-147).
	KindEndOfData
	// KindWatermarkStatus says the producer went idle or active again (one
	// byte: 1 idle, 0 active); ordered with records like watermarks.
	KindWatermarkStatus
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindWatermark:
		return "watermark"
	case KindEndOfPartition:
		return "end-of-partition"
	case KindBarrier:
		return "barrier"
	case KindCancelCheckpoint:
		return "cancel-checkpoint"
	case KindEndOfData:
		return "end-of-data"
	case KindWatermarkStatus:
		return "watermark-status"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Buffer is a byte buffer that travels down a channel. Exactly one goroutine
// owns a buffer at a time: the producer while filling it, the channel while
// it is queued, the consumer until it calls Recycle.
//
// A data buffer (KindData) has a fixed capacity and belongs to a pool; it
// holds framed records and costs its receiver one credit. An event buffer
// (every other kind) is small, belongs to no pool and costs no credit, so
// events never wait for the data pool: a backpressured producer can still
// send them, and they use no network memory.
type Buffer struct {
	// Data holds the bytes written so far; for data buffers cap(Data) is the
	// pool's buffer size.
	Data []byte
	Kind Kind
	pool *BufferPool // nil for events
	// pooled is true while the buffer sits in its pool's free list; it makes
	// a second Recycle panic even when the free list has room for it.
	pooled atomic.Bool
	// priority events overtake queued data (unaligned barriers).
	priority bool
	// Overtaken is set on a priority event by the receiving channel: the
	// number of buffers queued there that it overtook and that are channel
	// state (IsChannelState: data, watermarks and statuses).
	Overtaken int
	// onSent, if set, is called once the event has been handed to the
	// receiver (see SetOnSent).
	onSent func()
}

// SetOnSent makes the channel call f once it has handed the event b to
// its receiver: at once, when credit lets its backlog go, or when it is
// promoted (PromoteBarrier). f runs on whichever goroutine delivers.
func (b *Buffer) SetOnSent(f func()) { b.onSent = f }

// IsEvent reports whether b is an event rather than data.
func (b *Buffer) IsEvent() bool { return b.Kind != KindData }

// Recycle returns a data buffer to its pool. The buffer must not be used
// afterwards; recycling it twice panics. Recycling an event does nothing.
func (b *Buffer) Recycle() {
	if b.pool == nil {
		return
	}
	if !b.pooled.CompareAndSwap(false, true) {
		panic("network: buffer recycled twice")
	}
	// Every per-use field is reset: a receiver's pooled buffer may carry a
	// priority barrier once and data or an aligned barrier next.
	b.Data = b.Data[:0]
	b.Kind = KindData
	b.priority, b.Overtaken = false, 0
	b.pool.put(b)
}

// Watermark decodes the watermark of a KindWatermark buffer.
func (b *Buffer) Watermark() int64 { return int64(binary.LittleEndian.Uint64(b.Data)) }

// NewWatermark returns a watermark event.
func NewWatermark(wm int64) *Buffer {
	return &Buffer{Kind: KindWatermark, Data: binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(wm))}
}

// NewWatermarkStatus returns a watermark-status event: idle, or active.
func NewWatermarkStatus(idle bool) *Buffer {
	d := []byte{0}
	if idle {
		d[0] = 1
	}
	return &Buffer{Kind: KindWatermarkStatus, Data: d}
}

// Idle decodes a KindWatermarkStatus event.
func (b *Buffer) Idle() bool { return b.Data[0] == 1 }

// InFlight is a copy of a buffer that an unaligned barrier overtook: the
// channel state of its checkpoint. Kind is KindData, KindWatermark or
// KindWatermarkStatus: the watermarks and statuses among the data are
// channel state too, in their places, since a restored consumer must take
// each record at the watermark it had in the run that took the checkpoint
// (the window operators keep their watermark in checkpoints, so without
// the in-flight watermarks a replayed record would find the older one of
// the snapshot and could be on time where it was late).
type InFlight struct {
	Kind Kind
	Data []byte
}

// IsChannelState reports whether b is channel state when an unaligned
// barrier overtakes it: data, a watermark or a watermark status.
func (b *Buffer) IsChannelState() bool { return b.Kind == KindData || b.isProgress() }

// isProgress reports whether b is a watermark or a watermark status: the
// events that coalesce while they wait (see coalesceProgress).
func (b *Buffer) isProgress() bool { return b.Kind == KindWatermark || b.Kind == KindWatermarkStatus }

// coalesceProgress appends b to q, keeping the run of watermark and status
// events at q's tail (after index from) down to at most one watermark and
// one status after it, so a consumer that does not read cannot pile up
// events: a watermark replaces the whole run (watermarks only advance, and
// a watermark makes an idle channel active, so the statuses before it no
// longer matter); a status replaces an earlier status of the run. The
// consumer then sees a shorter history with the same final state. It
// returns the events dropped, for the caller to recycle.
func coalesceProgress(q []*Buffer, from int, b *Buffer) ([]*Buffer, []*Buffer) {
	if !b.isProgress() {
		return append(q, b), nil
	}
	i := len(q)
	for i > from && q[i-1].isProgress() {
		i--
	}
	var dropped []*Buffer
	if b.Kind == KindWatermark {
		dropped = append(dropped, q[i:]...)
		q = q[:i]
	} else if n := len(q); n > i && q[n-1].Kind == KindWatermarkStatus {
		dropped = append(dropped, q[n-1])
		q = q[:n-1]
	}
	return append(q, b), dropped
}

// NewEndOfPartition returns an end-of-partition event.
func NewEndOfPartition() *Buffer { return &Buffer{Kind: KindEndOfPartition} }

// NewEndOfData returns an end-of-data event.
func NewEndOfData() *Buffer { return &Buffer{Kind: KindEndOfData} }

// Barrier is a checkpoint barrier as it travels in a channel.
type Barrier struct {
	ID        int64
	Timestamp int64 // trigger time, epoch ms
	// Unaligned: the barrier overtakes data (a priority event).
	Unaligned bool
	// AtLeastOnce: receivers do not block channels while aligning.
	AtLeastOnce bool
	// Kind is the checkpoint's protocol.CheckpointKind.
	Kind uint8
	// AlignedTimeout (ms) > 0: turn unaligned when alignment takes longer.
	AlignedTimeout int64
	// Native (savepoints only): keyed state in the backend's own format
	// (Pebble files) instead of the canonical one.
	Native bool
}

const (
	barrierUnaligned   = 1
	barrierAtLeastOnce = 2
	barrierNative      = 4
)

// NewBarrier returns a barrier event.
func NewBarrier(br Barrier) *Buffer {
	d := make([]byte, 0, 26)
	d = binary.LittleEndian.AppendUint64(d, uint64(br.ID))
	d = binary.LittleEndian.AppendUint64(d, uint64(br.Timestamp))
	d = binary.LittleEndian.AppendUint64(d, uint64(br.AlignedTimeout))
	var flags byte
	if br.Unaligned {
		flags |= barrierUnaligned
	}
	if br.AtLeastOnce {
		flags |= barrierAtLeastOnce
	}
	if br.Native {
		flags |= barrierNative
	}
	d = append(d, flags, br.Kind)
	return &Buffer{Kind: KindBarrier, Data: d}
}

// Barrier decodes a KindBarrier event.
func (b *Buffer) Barrier() Barrier {
	d := b.Data
	return Barrier{
		ID: int64(binary.LittleEndian.Uint64(d)), Timestamp: int64(binary.LittleEndian.Uint64(d[8:])),
		AlignedTimeout: int64(binary.LittleEndian.Uint64(d[16:])),
		Unaligned:      d[24]&barrierUnaligned != 0, AtLeastOnce: d[24]&barrierAtLeastOnce != 0, Kind: d[25],
		Native: d[24]&barrierNative != 0,
	}
}

// promoteBarrier turns the aligned barrier event b unaligned, in place.
func (b *Buffer) promoteBarrier() { b.Data[24] |= barrierUnaligned }

// isAlignedBarrier reports whether b is the aligned barrier of checkpoint id.
func (b *Buffer) isAlignedBarrier(id int64) bool {
	if b.Kind != KindBarrier || b.priority {
		return false
	}
	br := b.Barrier()
	return br.ID == id && !br.Unaligned
}

// NewCancelCheckpoint returns a cancel marker for checkpoint id.
func NewCancelCheckpoint(id int64) *Buffer {
	return &Buffer{Kind: KindCancelCheckpoint, Data: binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(id))}
}

// CheckpointID decodes the id of a KindCancelCheckpoint event.
func (b *Buffer) CheckpointID() int64 { return int64(binary.LittleEndian.Uint64(b.Data)) }

// ErrCanceled is returned by blocking calls when the task is canceled.
var ErrCanceled = errors.New("network: canceled")

// Budget is the network memory of one TaskManager: the most bytes that the
// data buffers of all its result partitions may take at once (Flink's
// taskmanager.memory.network.max). Every pool reserves its minimum when it
// is created, so a job that cannot get its minimum fails at deployment,
// and takes further buffers from the budget only while they are free.
// Memory is allocated lazily: it follows the data in flight, not the number
// of channels.
type Budget struct {
	mu       sync.Mutex // guards used
	capacity int64
	used     int64 // bytes of pool minimums plus buffers allocated above them
}

// NewBudget returns a budget of capacity bytes.
func NewBudget(capacity int64) *Budget { return &Budget{capacity: capacity} }

// Capacity is the budget's size in bytes.
func (b *Budget) Capacity() int64 { return b.capacity }

// Used is the bytes reserved or taken by pools now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// BudgetError says that a pool's minimum does not fit the budget.
type BudgetError struct {
	Need, Available, Capacity int64 // bytes
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("network memory exhausted: a result partition needs %s, %s of %s are free",
		memory.FormatBytes(e.Need), memory.FormatBytes(e.Available), memory.FormatBytes(e.Capacity))
}

func (b *Budget) take(n int64, mustFit bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.capacity {
		if mustFit {
			return &BudgetError{Need: n, Available: b.capacity - b.used, Capacity: b.capacity}
		}
		return errNoRoom
	}
	b.used += n
	return nil
}

var errNoRoom = errors.New("no room")

func (b *Budget) room(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used+n <= b.capacity
}

func (b *Budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic("network: budget released more than it gave")
	}
	b.mu.Unlock()
}

// NewPool creates a pool of buffers of size bytes that always may hold min
// buffers (reserved from the budget now) and up to max while the budget has
// room. It fails with a *BudgetError when min buffers do not fit. A pool of
// min 0 (a gate's floating buffers) has only what the budget's room gives:
// take from it with TryRequest, since Request could wait for a buffer it
// never had.
func (b *Budget) NewPool(min, max, size int) (*BufferPool, error) {
	p := newPool(min, max, size)
	if err := b.take(int64(min)*int64(size), true); err != nil {
		return nil, err
	}
	p.budget = b
	return p, nil
}

// BufferPool is a bounded set of equally sized data buffers. Buffers are
// allocated on first need and then reused; the pool never holds more than
// max. Up to min are guaranteed; more are taken from the pool's budget while
// it has room. When no buffer can be had, Request blocks until one is
// recycled: that block is where backpressure reaches a producer.
type BufferPool struct {
	size     int
	min, max int
	budget   *Budget // nil: unbudgeted (tests, benchmarks)
	free     chan *Buffer
	// notify, if set, is signalled (coalesced) whenever a buffer comes back,
	// so a producer that found its output unavailable can wait for it.
	notify chan struct{}

	mu        sync.Mutex // guards allocated, charged, overdraft, closed
	allocated int        // buffers in existence (up to max + MaxOverdraft)
	charged   int        // buffers above min taken from the budget
	closed    bool
	// overdraft counts buffers beyond max that are out (RequestOverdraft).
	// The first buffers to come back while it is positive are dropped
	// instead of pooled, so the pool returns to max and the overdraft is
	// lent again the next time a producer needs it.
	overdraft atomic.Int32
	// retired holds the buffers those drops took out of the pool, for
	// the next RequestOverdraft to lend again instead of allocating (a
	// producer whose consumer is slower overdraws again and again; each
	// new 32 KiB buffer was garbage). retired plus overdraft never exceed
	// MaxOverdraft; Close drops them. Guarded by mu.
	retired []*Buffer
	// inUse counts buffers out of the pool; maxInUse is its high-water mark.
	inUse, maxInUse atomic.Int64
}

// NewBufferPool returns an unbudgeted pool of up to n buffers of size bytes,
// allocated on first use.
func NewBufferPool(n, size int) *BufferPool { return newPool(n, n, size) }

func newPool(min, max, size int) *BufferPool {
	if min < 0 || max < 1 || max < min || size < 64 {
		panic(fmt.Sprintf("network: pool of %d..%d buffers of %d bytes is invalid", min, max, size))
	}
	return &BufferPool{size: size, min: min, max: max, free: make(chan *Buffer, max+MaxOverdraft)}
}

// MaxOverdraft is how many buffers beyond its maximum a pool lends to a
// producer that is in the middle of processing one input and cannot stop
// (Flink's taskmanager.network.memory.max-overdraft-buffers-per-gate).
const MaxOverdraft = 5

// NotifyOn makes the pool signal ch (without blocking) whenever a buffer is
// recycled. Set it before the pool is used.
func (p *BufferPool) NotifyOn(ch chan struct{}) { p.notify = ch }

// Available reports whether a Request would not block now.
func (p *BufferPool) Available() bool {
	if len(p.free) > 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	return p.allocated < p.min || p.allocated < p.max && (p.budget == nil || p.budget.room(int64(p.size)))
}

// RequestOverdraft returns a buffer even when the pool is exhausted, up to
// MaxOverdraft beyond its maximum; nil when those are out too.
func (p *BufferPool) RequestOverdraft() *Buffer {
	if b := p.TryRequest(); b != nil {
		return b
	}
	p.mu.Lock()
	ok := !p.closed && p.overdraft.Load() < MaxOverdraft
	var b *Buffer
	if ok {
		p.overdraft.Add(1)
		p.allocated++
		if n := len(p.retired); n > 0 {
			b = p.retired[n-1]
			p.retired[n-1] = nil
			p.retired = p.retired[:n-1]
		}
	}
	p.mu.Unlock()
	if !ok {
		return nil
	}
	if b == nil {
		b = &Buffer{Data: make([]byte, 0, p.size), pool: p}
	}
	p.took(b)
	return b
}

// BufferSize is the capacity of each buffer.
func (p *BufferPool) BufferSize() int { return p.size }

// Capacity is the most buffers the pool may ever hold, overdraft included.
func (p *BufferPool) Capacity() int { return p.max + MaxOverdraft }

// Allocated is the number of buffers the pool has allocated so far.
func (p *BufferPool) Allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allocated
}

// InUse is the number of buffers currently out of the pool.
func (p *BufferPool) InUse() int { return int(p.inUse.Load()) }

// MaxInUse is the largest number of buffers that were ever out at once.
func (p *BufferPool) MaxInUse() int { return int(p.maxInUse.Load()) }

// TryRequest returns a free buffer, or nil if none is free and the pool may
// not allocate another.
func (p *BufferPool) TryRequest() *Buffer {
	select {
	case b := <-p.free:
		p.took(b)
		return b
	default:
	}
	if b := p.grow(); b != nil {
		p.took(b)
		return b
	}
	return nil
}

// grow allocates a new buffer if the pool is below its minimum, or below its
// maximum with room in the budget.
func (p *BufferPool) grow() *Buffer {
	p.mu.Lock()
	ok := !p.closed && p.allocated < p.min
	if !ok && !p.closed && p.allocated < p.max && (p.budget == nil || p.budget.take(int64(p.size), false) == nil) {
		ok = true
		p.charged++
	}
	if ok {
		p.allocated++
	}
	p.mu.Unlock()
	if !ok {
		return nil
	}
	return &Buffer{Data: make([]byte, 0, p.size), pool: p}
}

// Request returns a free buffer, blocking until one is recycled or cancel is
// closed (then it returns ErrCanceled). It never waits forever on its own:
// the pool has allocated at least one buffer, which is on its way back.
func (p *BufferPool) Request(cancel <-chan struct{}) (*Buffer, error) {
	if b := p.TryRequest(); b != nil {
		return b, nil
	}
	select {
	case b := <-p.free:
		p.took(b)
		return b, nil
	case <-cancel:
		return nil, ErrCanceled
	}
}

// Close gives the pool's share back to its budget. Buffers still out may be
// recycled afterwards; the pool allocates nothing more.
func (p *BufferPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.retired = nil
	if p.budget != nil {
		p.budget.release(int64(p.min+p.charged) * int64(p.size))
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
	if p.overdraft.Load() > 0 && p.dropOverdraft(b) {
		p.signal()
		return
	}
	select {
	case p.free <- b:
	default:
		panic("network: buffer recycled twice or into a foreign pool")
	}
	p.signal()
}

// dropOverdraft retires b in place of one buffer lent beyond max, if any
// is still counted, keeping it for the next overdraft.
func (p *BufferPool) dropOverdraft(b *Buffer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.overdraft.Load() == 0 {
		return false
	}
	p.overdraft.Add(-1)
	p.allocated--
	if !p.closed {
		p.retired = append(p.retired, b)
	}
	return true
}

func (p *BufferPool) signal() {
	if p.notify != nil {
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
}
