package operator

import (
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
	// runs is in as a RunEnder, if it is one: told when ProcessFrom ends.
	runs RunEnder
}

// NewReader returns a reader for an input with the given number of channels.
func NewReader[T any](c codec.Codec[T], in Input[T], channels int, stats *IOStats, name string) *Reader[T] {
	r := &Reader[T]{codec: c, in: in, frames: make([]network.Deframer, channels), stats: stats, name: name}
	r.memSize, _ = codec.MemorySize(c)
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
	if r.memSize > 0 && !d.Open() {
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
