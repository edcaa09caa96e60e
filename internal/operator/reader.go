package operator

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
)

// RecordReader is the type-erased side of a Reader, used by the task.
type RecordReader interface {
	// ProcessFrom decodes the records of a data buffer that came from
	// channel ch of this input, from offset pos, and passes them on. It
	// stops after a record when IOStats.Yield is set and returns the offset
	// where it stopped; len(data) once the buffer is done.
	ProcessFrom(ch int, data []byte, pos int) (int, error)
	// ProcessBuffer decodes every complete record of a data buffer, never
	// stopping early.
	ProcessBuffer(ch int, data []byte) error
	// Unconsumed returns channel ch's record that spans buffers, framed, as
	// far as it has arrived (nil if none): channel state of an unaligned
	// checkpoint.
	Unconsumed(ch int) []byte
	// ProcessWatermark passes on the input's combined watermark.
	ProcessWatermark(wm int64)
	// ChannelEnded checks that channel ch did not end in the middle of a record.
	ChannelEnded(ch int) error
}

// Reader decodes the records of one logical input and hands them to the
// operator's Input.
type Reader[T any] struct {
	codec  codec.Codec[T]
	in     Input[T]
	frames []network.Deframer // per channel: records may span its buffers
	stats  *IOStats
	name   string
	// memSize > 0 when T's encoding is its memory: records are copied out
	// of the buffer without calling the codec.
	memSize int
	// batch is in when it takes batches and memSize > 0: records are then
	// copied out into buf and handed on up to len(buf) at a time.
	batch BatchInput[T]
	buf   []T
	// runs is in as a RunEnder, if it is one: told when ProcessFrom ends.
	runs RunEnder
}

// maxBatchBytes bounds a batch the reader hands on: with at most 64 records
// and 2 KiB of them, what the chain writes per batch stays within a few
// buffers (the overdraft), as for a source's batch.
const maxBatchBytes = 2 << 10

// NewReader returns a reader for an input with the given number of channels.
func NewReader[T any](c codec.Codec[T], in Input[T], channels int, stats *IOStats, name string) *Reader[T] {
	r := &Reader[T]{codec: c, in: in, frames: make([]network.Deframer, channels), stats: stats, name: name}
	r.memSize, _ = codec.MemorySize(c)
	if b := AsBatch(in); b != nil && r.memSize > 0 {
		r.batch = b
		r.buf = make([]T, max(1, min(64, maxBatchBytes/r.memSize)))
	}
	if re, ok := in.(RunEnder); ok {
		re.UseRuns()
		r.runs = re
	}
	return r
}

// ProcessFrom implements RecordReader. Stopping between records lets the
// task take a barrier that overtook the data, run its mailbox, or wait for
// a full output, without finishing a buffer that may hold thousands of
// records first; the check is one atomic load per record.
func (r *Reader[T]) ProcessFrom(ch int, data []byte, pos int) (int, error) {
	next, err := r.processFrom(ch, data, pos)
	if r.runs != nil {
		r.runs.EndRun()
	}
	return next, err
}

func (r *Reader[T]) processFrom(ch int, data []byte, pos int) (int, error) {
	d := &r.frames[ch]
	if pos == 0 {
		r.stats.BytesIn += int64(len(data))
	}
	yield := &r.stats.Yield
	if r.batch != nil && !d.Open() {
		next, stop := r.batches(data, pos)
		if stop {
			return next, nil
		}
		pos = next
	} else if r.memSize > 0 && !d.Open() {
		// Fast path for memory-layout records that lie wholly in the buffer:
		// no call per record besides the operator's.
		n := int64(0)
		for {
			start, end, ts, ok := network.NextInBuffer(data, pos)
			if !ok || end-start != r.memSize {
				break
			}
			var v T
			copyMemory(unsafe.Slice((*byte)(unsafe.Pointer(&v)), r.memSize), unsafe.Pointer(&data[start]), unsafe.Sizeof(v))
			pos = end
			n++
			r.in.ProcessElement(v, ts)
			if yield.Load() {
				r.stats.RecordsIn += n
				return pos, nil
			}
		}
		r.stats.RecordsIn += n
	}
	for {
		var payload []byte
		var ts int64
		if start, end, t, ok := network.NextInBuffer(data, pos); ok && !d.Open() {
			payload, ts, pos = data[start:end], t, end
			if err := r.emit(ch, payload, ts); err != nil {
				return pos, err
			}
			if yield.Load() {
				return pos, nil
			}
			continue
		}
		if pos >= len(data) && !d.Open() {
			return len(data), nil
		}
		payload, ts, next, ok, err := d.Next(data, pos)
		if err != nil {
			return pos, fmt.Errorf("%s, channel %d: %w", r.name, ch, err)
		}
		if !ok {
			return len(data), nil
		}
		pos = next
		if err := r.emit(ch, payload, ts); err != nil {
			return pos, err
		}
		if yield.Load() {
			return pos, nil
		}
	}
}

// batches hands on the memory-layout records that lie wholly in data from
// pos, in batches of consecutive records with the same timestamp, and
// returns where it stopped: at the first record it cannot take (cut off by
// the buffer's end, or of another size), or after a batch when Yield is
// set (stop). The yield check moves from every record to every batch (at
// most 64 records), as for a source's batches.
func (r *Reader[T]) batches(data []byte, pos int) (next int, stop bool) {
	buf := r.buf
	size := unsafe.Sizeof(buf[0])
	ms := r.memSize
	rec := 4 + ms
	// The header of a record without timestamp: compared as one word.
	plain := uint32(ms) << 1
	for {
		n, p, ts := 0, pos, int64(NoTimestamp)
		for n < len(buf) && len(data)-p >= rec && binary.LittleEndian.Uint32(data[p:]) == plain {
			copyMemory(unsafe.Slice((*byte)(unsafe.Pointer(&buf[n])), ms), unsafe.Pointer(&data[p+4]), size)
			n++
			p += rec
		}
		if n == 0 {
			// Records with timestamps: a batch per run of equal ones.
			for n < len(buf) {
				start, end, t, ok := network.NextInBuffer(data, p)
				if !ok || end-start != ms || (n > 0 && t != ts) {
					break
				}
				ts = t
				copyMemory(unsafe.Slice((*byte)(unsafe.Pointer(&buf[n])), ms), unsafe.Pointer(&data[start]), size)
				n++
				p = end
			}
			if n == 0 {
				return pos, false
			}
		}
		pos = p
		r.stats.RecordsIn += int64(n)
		r.batch.ProcessBatch(buf[:n], ts)
		if r.stats.Yield.Load() {
			return pos, true
		}
	}
}

// ProcessBuffer implements RecordReader.
func (r *Reader[T]) ProcessBuffer(ch int, data []byte) error {
	for pos := 0; ; {
		next, err := r.ProcessFrom(ch, data, pos)
		if err != nil || next >= len(data) {
			return err
		}
		pos = next
	}
}

// Unconsumed implements RecordReader.
func (r *Reader[T]) Unconsumed(ch int) []byte { return r.frames[ch].Unconsumed() }

func (r *Reader[T]) emit(ch int, payload []byte, ts int64) error {
	if r.memSize > 0 && len(payload) == r.memSize {
		var v T
		copyMemory(unsafe.Slice((*byte)(unsafe.Pointer(&v)), r.memSize), unsafe.Pointer(unsafe.SliceData(payload)), unsafe.Sizeof(v))
		r.stats.RecordsIn++
		r.in.ProcessElement(v, ts)
		return nil
	}
	v, n, err := r.codec.Decode(payload)
	if err != nil {
		return fmt.Errorf("%s, channel %d: decoding a record of %d bytes: %w", r.name, ch, len(payload), err)
	}
	if n != len(payload) {
		return fmt.Errorf("%s, channel %d: the codec used %d of a record's %d bytes", r.name, ch, n, len(payload))
	}
	r.stats.RecordsIn++
	r.in.ProcessElement(v, ts)
	return nil
}

// ProcessWatermark implements RecordReader.
func (r *Reader[T]) ProcessWatermark(wm int64) { r.in.ProcessWatermark(wm) }

// ChannelEnded implements RecordReader.
func (r *Reader[T]) ChannelEnded(ch int) error {
	if r.frames[ch].Open() {
		return fmt.Errorf("%s, channel %d: the channel ended in the middle of a record", r.name, ch)
	}
	return nil
}
