package network

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record framing inside data buffers.
//
// Each record is a 4-byte little-endian header (payload length << 1 | has
// timestamp), then the 8-byte timestamp if present, then the payload. The
// header and timestamp never span buffers (a writer starts a new buffer when
// fewer than MaxHeader bytes remain); the payload may span any number of
// buffers of the same channel.

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp = math.MinInt64

// MaxHeader is the most bytes a record header (with timestamp) takes.
const MaxHeader = 12

// MaxRecordSize is the largest payload a record may have.
const MaxRecordSize = 1 << 30

// PutHeader writes a record header at dst[0:] and returns its length.
// dst must have at least MaxHeader bytes.
func PutHeader(dst []byte, payloadLen int, ts int64) int {
	if ts == NoTimestamp {
		binary.LittleEndian.PutUint32(dst, uint32(payloadLen)<<1)
		return 4
	}
	binary.LittleEndian.PutUint32(dst, uint32(payloadLen)<<1|1)
	binary.LittleEndian.PutUint64(dst[4:], uint64(ts))
	return 12
}

// HeaderLen is the header length for a record with timestamp ts.
func HeaderLen(ts int64) int {
	if ts == NoTimestamp {
		return 4
	}
	return 12
}

// NextInBuffer is the fast path of Deframer.Next for a record that lies wholly
// in buf at pos: it returns the payload bounds and timestamp, or ok=false
// when the record is cut off or malformed (then the caller uses Next).
func NextInBuffer(buf []byte, pos int) (start, end int, ts int64, ok bool) {
	if len(buf)-pos < 4 {
		return 0, 0, 0, false
	}
	h := binary.LittleEndian.Uint32(buf[pos:])
	start = pos + 4
	ts = NoTimestamp
	if h&1 == 1 {
		if len(buf)-start < 8 {
			return 0, 0, 0, false
		}
		ts = int64(binary.LittleEndian.Uint64(buf[start:]))
		start += 8
	}
	end = start + int(h>>1)
	if end > len(buf) || end < start {
		return 0, 0, 0, false
	}
	return start, end, ts, true
}

// Deframer reads records out of the data buffers of one channel, in order.
// It keeps the part of a record that spans buffers until the rest arrives.
type Deframer struct {
	partial []byte // payload bytes of a spanning record gathered so far
	need    int    // payload bytes still missing; 0 when no record is open
	ts      int64  // timestamp of the open record
}

// Next returns the next complete record of buf starting at offset pos, and the
// offset after it. ok is false when buf holds no further complete record (the
// rest, if any, is kept for the next buffer of this channel). payload aliases
// buf or the deframer's own memory and is valid until the next call.
func (d *Deframer) Next(buf []byte, pos int) (payload []byte, ts int64, next int, ok bool, err error) {
	if d.need > 0 {
		take := min(d.need, len(buf)-pos)
		d.partial = append(d.partial, buf[pos:pos+take]...)
		d.need -= take
		pos += take
		if d.need > 0 {
			return nil, 0, pos, false, nil
		}
		return d.partial, d.ts, pos, true, nil
	}
	if pos >= len(buf) {
		return nil, 0, pos, false, nil
	}
	if len(buf)-pos < 4 {
		return nil, 0, pos, false, fmt.Errorf("network: truncated record header at offset %d of a %d-byte buffer", pos, len(buf))
	}
	h := binary.LittleEndian.Uint32(buf[pos:])
	n := int(h >> 1)
	ts = NoTimestamp
	pos += 4
	if h&1 == 1 {
		if len(buf)-pos < 8 {
			return nil, 0, pos, false, fmt.Errorf("network: truncated record timestamp at offset %d of a %d-byte buffer", pos-4, len(buf))
		}
		ts = int64(binary.LittleEndian.Uint64(buf[pos:]))
		pos += 8
	}
	if n > MaxRecordSize {
		return nil, 0, pos, false, fmt.Errorf("network: record length %d at offset %d exceeds the maximum %d", n, pos, MaxRecordSize)
	}
	if len(buf)-pos >= n {
		return buf[pos : pos+n], ts, pos + n, true, nil
	}
	// The payload continues in the next buffer.
	d.partial = append(d.partial[:0], buf[pos:]...)
	d.need = n - (len(buf) - pos)
	d.ts = ts
	return nil, 0, len(buf), false, nil
}

// Open reports whether a spanning record is waiting for more bytes; a channel
// that ends while Open is true was cut off mid-record.
func (d *Deframer) Open() bool { return d.need > 0 }

// Unconsumed returns the open record's header and the payload bytes gathered
// so far, framed as they came: a fresh Deframer fed these bytes and then the
// rest of the channel reads the same records. nil when no record is open.
// (An unaligned checkpoint stores them first in the channel's state.)
func (d *Deframer) Unconsumed() []byte {
	if d.need == 0 {
		return nil
	}
	out := make([]byte, MaxHeader, MaxHeader+len(d.partial))
	out = out[:PutHeader(out, len(d.partial)+d.need, d.ts)]
	return append(out, d.partial...)
}
