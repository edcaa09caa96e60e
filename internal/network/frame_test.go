package network

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// frame appends one record, header and payload, to dst.
func frame(dst, payload []byte, ts int64) []byte {
	var h [MaxHeader]byte
	n := PutHeader(h[:], len(payload), ts)
	dst = append(dst, h[:n]...)
	return append(dst, payload...)
}

func TestHeaderLen(t *testing.T) {
	var h [MaxHeader]byte
	for _, ts := range []int64{NoTimestamp, 0, -1, math.MaxInt64, math.MinInt64 + 1} {
		if n := PutHeader(h[:], 5, ts); n != HeaderLen(ts) {
			t.Errorf("ts %d: PutHeader wrote %d bytes, HeaderLen says %d", ts, n, HeaderLen(ts))
		}
	}
}

type deframed struct {
	payload string
	ts      int64
}

// deframeAll runs a deframer over buffers the way a reader does.
func deframeAll(bufs [][]byte) (recs []deframed, err error) {
	var d Deframer
	for _, buf := range bufs {
		pos := 0
		for {
			payload, ts, next, ok, err := d.Next(buf, pos)
			if err != nil {
				return recs, err
			}
			if next < pos || next > len(buf) {
				panic("deframer moved to an offset outside the buffer")
			}
			if !ok {
				if next != len(buf) {
					panic("deframer stopped before the end of a buffer without an error")
				}
				break
			}
			if next == pos {
				panic("deframer returned a record without consuming bytes")
			}
			pos = next
			recs = append(recs, deframed{string(payload), ts})
		}
	}
	if d.Open() {
		return recs, errCutOff
	}
	return recs, nil
}

var errCutOff = errors.New("channel ended mid-record")

func TestDeframerSpanning(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789"), 50)
	var stream []byte
	stream = frame(stream, []byte("a"), NoTimestamp)
	stream = frame(stream, nil, 7)
	stream = frame(stream, long, -3)
	stream = frame(stream, []byte("tail"), NoTimestamp)
	want := []deframed{{"a", NoTimestamp}, {"", 7}, {string(long), -3}, {"tail", NoTimestamp}}
	// Cut the stream only where a writer may: never inside a header.
	for size := 20; size <= len(stream); size += 7 {
		var bufs [][]byte
		pos := 0
		for _, rec := range want {
			h := HeaderLen(rec.ts)
			if len(bufs) == 0 || cap(bufs[len(bufs)-1])-len(bufs[len(bufs)-1]) < h {
				bufs = append(bufs, make([]byte, 0, size))
			}
			for left := h + len(rec.payload); left > 0; {
				b := &bufs[len(bufs)-1]
				if cap(*b) == len(*b) {
					bufs = append(bufs, make([]byte, 0, size))
					b = &bufs[len(bufs)-1]
				}
				n := min(left, cap(*b)-len(*b))
				*b = append(*b, stream[pos:pos+n]...)
				pos += n
				left -= n
			}
		}
		got, err := deframeAll(bufs)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(got) != len(want) {
			t.Fatalf("size %d: %d records, want %d", size, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("size %d: record %d = %.20q@%d, want %.20q@%d", size, i, got[i].payload, got[i].ts, want[i].payload, want[i].ts)
			}
		}
	}
}

func TestDeframerErrors(t *testing.T) {
	var h [MaxHeader]byte
	PutHeader(h[:], 3, 99)
	for name, buf := range map[string][]byte{
		"truncated header":    {1, 0},
		"truncated timestamp": h[:7],
		"too long":            {0xff, 0xff, 0xff, 0xff},
	} {
		var d Deframer
		if _, _, _, _, err := d.Next(buf, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var d Deframer
	if _, _, _, ok, err := d.Next(frame(nil, []byte("abcd"), NoTimestamp)[:6], 0); ok || err != nil || !d.Open() {
		t.Fatalf("record cut off: ok %v err %v open %v", ok, err, d.Open())
	}
}

// FuzzDeframer: arbitrary bytes cut into arbitrary buffers never panic.
// cuts gives buffer lengths, one byte each (0 means an empty buffer).
func FuzzDeframer(f *testing.F) {
	var valid []byte
	valid = frame(valid, []byte("hello"), NoTimestamp)
	valid = frame(valid, bytes.Repeat([]byte{7}, 300), 42)
	valid = frame(valid, nil, math.MaxInt64)
	f.Add(valid, []byte{64, 64, 64, 64, 64, 64})
	f.Add(valid, []byte{9, 0, 255})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{4})
	f.Add([]byte{1, 0, 0, 0, 1}, []byte{})
	f.Add([]byte{0xfe, 0xff, 0xff, 0x7f}, []byte{2, 2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var bufs [][]byte
		for _, c := range cuts {
			n := min(int(c), len(data))
			bufs = append(bufs, data[:n:n])
			data = data[n:]
		}
		if len(data) > 0 {
			bufs = append(bufs, data)
		}
		// The reader's fast path agrees with the deframer wherever it
		// accepts a record.
		for _, buf := range bufs {
			for pos := 0; pos < len(buf); pos++ {
				start, end, ts, ok := NextInBuffer(buf, pos)
				if !ok {
					continue
				}
				var d Deframer
				payload, ts2, next, ok2, err := d.Next(buf, pos)
				if err != nil || !ok2 || next != end || ts2 != ts || !bytes.Equal(payload, buf[start:end]) {
					t.Fatalf("at %d: NextInBuffer says [%d:%d] ts %d; Next says ok %v next %d ts %d err %v",
						pos, start, end, ts, ok2, next, ts2, err)
				}
			}
		}
		recs, err := deframeAll(bufs)
		if err == nil {
			// Without an error every byte belongs to a record: re-framing
			// the records gives back the input.
			var again []byte
			for _, r := range recs {
				again = frame(again, []byte(r.payload), r.ts)
			}
			in := bytes.Join(bufs, nil)
			if bytes.Equal(again, in) {
				return
			}
			// A header that carries the timestamp NoTimestamp explicitly
			// re-frames 8 bytes shorter; nothing else may differ.
			noTS := 0
			for _, r := range recs {
				if r.ts == NoTimestamp {
					noTS++
				}
			}
			d := len(in) - len(again)
			if d <= 0 || d%8 != 0 || d/8 > noTS {
				t.Fatalf("records re-frame to %d bytes, input was %d", len(again), len(in))
			}
		}
	})
}
