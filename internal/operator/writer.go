package operator

import (
	"encoding/binary"
	"unsafe"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
)

// PartitionWriter is the type-erased control side of a Writer, used by the task.
type PartitionWriter interface {
	// Flush hands every partly filled buffer to its channel.
	Flush()
	// Held is the number of buffers of the partition's pool the writer
	// holds (its channels' partly filled ones): the pool's buffers in use
	// beyond these are in channels and come back once consumed.
	Held() int
	// EndOfData flushes and tells every consumer that no records follow
	// (barriers still may, until the final checkpoint).
	EndOfData()
	// EndOfPartition flushes and tells every consumer that nothing more comes.
	EndOfPartition()
	// Barrier sends a checkpoint barrier on every channel. An aligned one
	// goes after everything written so far. An unaligned one is a priority
	// event that overtakes the data still waiting to be delivered; it
	// returns, per channel, copies of the overtaken buffers, watermarks
	// and statuses (the sender's channel state). onSent, if not nil, is called for each
	// aligned barrier handed to its receiver (network.Buffer.SetOnSent).
	Barrier(b network.Barrier, onSent func()) (overtaken [][]network.InFlight)
	// CancelCheckpoint sends a cancel marker for checkpoint id on every channel.
	CancelCheckpoint(id int64)
	// WatermarkStatus flushes and announces idle or active on every channel.
	// While idle the writer drops watermarks, except the maximum one (the
	// end of input), which makes it active again.
	WatermarkStatus(idle bool)
	// Partition is the result partition written to.
	Partition() *network.ResultPartition
}

// Writer serializes the records of one output edge into the buffers of a
// result partition, choosing a channel per record with its selector.
//
// Records are encoded in place into the channel's current buffer when it has
// room for the largest record seen so far; otherwise (or when the encoding
// outgrew the buffer) the encoded bytes are copied, spanning buffers if needed.
type Writer[T any] struct {
	codec codec.Codec[T]
	rp    *network.ResultPartition
	cur   []*network.Buffer
	sel   func(T) int // nil: broadcast
	// selBatch, when not nil, routes a whole batch at once (Selector.Batch);
	// chs holds its result.
	selBatch  func([]T, []int32)
	chs       []int32
	cancel    <-chan struct{}
	stats     *IOStats
	scratch   []byte
	bigRecord int // largest header+payload seen, to decide encoding in place
	// memSize > 0 when T's encoding is its memory (codec.MemorySize): records
	// are then copied into the buffer without calling the codec.
	memSize int
	// idle: the last status announced was idle (see WatermarkStatus).
	idle bool
}

// NewWriter returns a writer over rp. sel picks the channel of a record; nil
// broadcasts every record to all channels.
func NewWriter[T any](c codec.Codec[T], rp *network.ResultPartition, sel func(T) int, cancel <-chan struct{}, stats *IOStats) *Writer[T] {
	w := &Writer[T]{codec: c, rp: rp, cur: make([]*network.Buffer, len(rp.Subs)), sel: sel, cancel: cancel, stats: stats, bigRecord: 64}
	if n, ok := codec.MemorySize(c); ok && n+network.MaxHeader <= rp.Pool.BufferSize() {
		w.memSize = n
	}
	return w
}

// ProcessBatch implements BatchInput: the records are routed first (all keys
// hashed in one loop when the selector routes batches), then appended to
// their channels' buffers, with the header built once per batch. The bytes
// written, their order per channel and the requests for buffers (and so the
// backpressure) are those of ProcessElement for each record.
func (w *Writer[T]) ProcessBatch(vs []T, ts int64) {
	if w.selBatch == nil {
		// Broadcasts and stateful or failing selectors (round robin, a
		// custom partitioner) go record by record, the selector
		// interleaved with the writes as before.
		for i := range vs {
			w.ProcessElement(vs[i], ts)
		}
		return
	}
	if len(vs) > cap(w.chs) {
		w.chs = make([]int32, len(vs))
	}
	chs := w.chs[:len(vs)]
	w.selBatch(vs, chs)
	w.stats.RecordsOut += int64(len(vs))
	if w.memSize == 0 {
		// Codec-encoded records: routed in one loop too, and written from
		// where they are (a large record, such as q18's 240-byte bid, was
		// copied for the selector's call and again for the write's).
		for i := range vs {
			w.write(int(chs[i]), &vs[i], ts)
		}
		return
	}
	h := network.HeaderLen(ts)
	rec := h + w.memSize
	var hdr [network.MaxHeader]byte
	network.PutHeader(hdr[:], w.memSize, ts)
	hdr4 := *(*[4]byte)(hdr[:])
	size := unsafe.Sizeof(vs[0])
	fast := 0
	for i := range vs {
		ch := chs[i]
		if b := w.cur[ch]; b != nil {
			start := len(b.Data)
			if end := start + rec; end <= cap(b.Data) {
				b.Data = b.Data[:end]
				if h == 4 {
					*(*[4]byte)(b.Data[start:]) = hdr4
				} else {
					*(*[network.MaxHeader]byte)(b.Data[start:]) = hdr
				}
				copyMemory(b.Data[start+h:end], unsafe.Pointer(&vs[i]), size)
				fast++
				continue
			}
		}
		w.write(int(ch), &vs[i], ts)
	}
	w.stats.BytesOut += int64(fast * rec)
}

// ProcessElement implements Input.
func (w *Writer[T]) ProcessElement(v T, ts int64) {
	w.stats.RecordsOut++
	if w.sel != nil {
		ch := w.sel(v)
		if b := w.cur[ch]; w.memSize > 0 && b != nil {
			// Fast path: a memory-layout record that fits the current buffer.
			start := len(b.Data)
			h := network.HeaderLen(ts)
			if end := start + h + w.memSize; end <= cap(b.Data) {
				b.Data = b.Data[:end]
				if h == 4 { // inline; PutHeader is not
					binary.LittleEndian.PutUint32(b.Data[start:], uint32(w.memSize)<<1)
				} else {
					network.PutHeader(b.Data[start:], w.memSize, ts)
				}
				copyMemory(b.Data[start+h:end], unsafe.Pointer(&v), unsafe.Sizeof(v))
				w.stats.BytesOut += int64(h + w.memSize)
				return
			}
		}
		w.write(ch, &v, ts)
		return
	}
	for ch := range w.cur {
		w.write(ch, &v, ts)
	}
}

// write appends *v to channel ch's buffers (v by pointer: records may be
// large, and the caller's copy is read in place).
func (w *Writer[T]) write(ch int, v *T, ts int64) {
	b := w.cur[ch]
	if b == nil {
		b = w.request()
		w.cur[ch] = b
	}
	start := len(b.Data)
	if w.memSize > 0 {
		h := network.HeaderLen(ts)
		end := start + h + w.memSize
		if end > cap(b.Data) {
			w.finish(ch)
			b = w.request()
			w.cur[ch] = b
			start, end = 0, h+w.memSize
		}
		b.Data = b.Data[:end]
		network.PutHeader(b.Data[start:], w.memSize, ts)
		copyMemory(b.Data[start+h:end], unsafe.Pointer(v), unsafe.Sizeof(*v))
		w.stats.BytesOut += int64(h + w.memSize)
		return
	}
	if cap(b.Data)-start >= w.bigRecord+network.MaxHeader {
		h := network.HeaderLen(ts)
		out := w.codec.AppendEncode(b.Data[:start+h], *v)
		if unsafe.SliceData(out) == unsafe.SliceData(b.Data) {
			n := len(out) - start - h
			network.PutHeader(out[start:], n, ts)
			b.Data = out
			w.stats.BytesOut += int64(n + h)
			if n+h > w.bigRecord {
				w.bigRecord = n + h
			}
			return
		}
		// The record outgrew the buffer: out is a new array holding it.
		payload := out[start+h:]
		w.bigRecord = max(w.bigRecord, len(payload)+h)
		w.writeBytes(ch, payload, ts)
		return
	}
	w.scratch = w.codec.AppendEncode(w.scratch[:0], *v)
	w.writeBytes(ch, w.scratch, ts)
}

// writeBytes frames an encoded payload into the channel's buffers, spanning
// as many as it needs.
func (w *Writer[T]) writeBytes(ch int, payload []byte, ts int64) {
	h := network.HeaderLen(ts)
	b := w.cur[ch]
	free := cap(b.Data) - len(b.Data)
	if free < h+len(payload) && (free < network.MaxHeader || h+len(payload) <= cap(b.Data)) {
		w.finish(ch)
		b = w.request()
		w.cur[ch] = b
	}
	start := len(b.Data)
	b.Data = b.Data[:start+h]
	network.PutHeader(b.Data[start:], len(payload), ts)
	w.stats.BytesOut += int64(h + len(payload))
	for {
		n := copy(b.Data[len(b.Data):cap(b.Data)], payload)
		b.Data = b.Data[:len(b.Data)+n]
		payload = payload[n:]
		if len(payload) == 0 {
			return
		}
		w.finish(ch)
		b = w.request()
		w.cur[ch] = b
	}
}

func (w *Writer[T]) finish(ch int) {
	w.rp.Subs[ch].Add(w.cur[ch])
	w.cur[ch] = nil
}

// request takes a buffer from the pool. The task polls its input only when
// its outputs are available, but one input may need more buffers than are
// free: then it takes an overdraft buffer, and only when those are out too
// it blocks (counting the time as backpressure). Cancellation unwinds the task.
func (w *Writer[T]) request() *network.Buffer {
	if b := w.rp.Pool.RequestOverdraft(); b != nil {
		if !w.rp.Pool.Available() {
			// The pool ran dry: the reader stops after this record and
			// the task waits for the output, serving its mailbox.
			w.stats.Yield.Store(true)
		}
		return b
	}
	c := w.stats.Clock
	if c == nil {
		c = clock.System{}
	}
	t0 := c.Now()
	b, err := w.rp.Pool.Request(w.cancel)
	w.stats.BackPressuredNanos += int64(c.Now().Sub(t0))
	if err != nil {
		panic(err)
	}
	return b
}

// ProcessWatermark implements Input: flush, then one watermark event per
// channel. Events need no buffer from the pool, so this never blocks.
func (w *Writer[T]) ProcessWatermark(wm int64) {
	if w.idle {
		if wm != MaxWatermark {
			return
		}
		w.WatermarkStatus(false)
	}
	w.stats.OutputWatermark = wm
	for ch := range w.cur {
		if w.cur[ch] != nil {
			w.finish(ch)
		}
		w.rp.Subs[ch].Add(network.NewWatermark(wm))
	}
}

// Flush implements PartitionWriter.
func (w *Writer[T]) Flush() {
	for ch, b := range w.cur {
		if b != nil && len(b.Data) > 0 {
			w.finish(ch)
		}
	}
}

// Held implements PartitionWriter.
func (w *Writer[T]) Held() int {
	n := 0
	for _, b := range w.cur {
		if b != nil {
			n++
		}
	}
	return n
}

// EndOfData implements PartitionWriter.
func (w *Writer[T]) EndOfData() { w.event(network.NewEndOfData) }

// WatermarkStatus implements PartitionWriter.
func (w *Writer[T]) WatermarkStatus(idle bool) {
	if idle == w.idle {
		return
	}
	w.idle = idle
	w.event(func() *network.Buffer { return network.NewWatermarkStatus(idle) })
}

// CancelCheckpoint implements PartitionWriter.
func (w *Writer[T]) CancelCheckpoint(id int64) {
	w.event(func() *network.Buffer { return network.NewCancelCheckpoint(id) })
}

// event flushes and sends an event on every channel, in order.
func (w *Writer[T]) event(mk func() *network.Buffer) {
	w.Flush()
	for ch := range w.cur {
		w.rp.Subs[ch].Add(mk())
	}
}

// Barrier implements PartitionWriter.
func (w *Writer[T]) Barrier(br network.Barrier, onSent func()) (overtaken [][]network.InFlight) {
	if !br.Unaligned {
		w.event(func() *network.Buffer {
			b := network.NewBarrier(br)
			if onSent != nil {
				b.SetOnSent(onSent)
			}
			return b
		})
		return nil
	}
	// Data written before the barrier is part of what it overtakes: hand
	// the partial buffers to their channels first.
	w.Flush()
	overtaken = make([][]network.InFlight, len(w.cur))
	for ch := range w.cur {
		overtaken[ch] = w.rp.Subs[ch].AddPriority(network.NewBarrier(br))
	}
	return overtaken
}

// Partition implements PartitionWriter.
func (w *Writer[T]) Partition() *network.ResultPartition { return w.rp }

// EndOfPartition implements PartitionWriter.
func (w *Writer[T]) EndOfPartition() {
	w.Flush()
	for ch := range w.cur {
		if w.cur[ch] != nil { // an empty current buffer goes back unused
			w.cur[ch].Recycle()
			w.cur[ch] = nil
		}
		w.rp.Subs[ch].Add(network.NewEndOfPartition())
	}
}

// copyMemory copies size bytes from p to dst. size is a constant in each
// instantiation of the callers, so the switch folds to one fixed-size move
// for the common record sizes instead of a memmove call.
func copyMemory(dst []byte, p unsafe.Pointer, size uintptr) {
	switch size {
	case 8:
		*(*[8]byte)(dst) = *(*[8]byte)(p)
	case 16:
		*(*[16]byte)(dst) = *(*[16]byte)(p)
	case 24:
		*(*[24]byte)(dst) = *(*[24]byte)(p)
	case 32:
		*(*[32]byte)(dst) = *(*[32]byte)(p)
	default:
		copy(dst, unsafe.Slice((*byte)(p), size))
	}
}
