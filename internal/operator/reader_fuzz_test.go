package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/tuple"
)

// encodeBuffers writes vals (timestamp i for the i-th) through a Writer into
// one channel with buffers of bufSize bytes and returns the data buffers'
// bytes, in order. The pool and credit are sized so the writer never blocks.
func encodeBuffers[T any](c codec.Codec[T], vals []T, bufSize, maxBuffers int) [][]byte {
	rp := network.NewResultPartition(1, network.NewBufferPool(maxBuffers, bufSize))
	g := network.NewInputGate()
	network.Connect(rp.Subs[0], g, 0, 0, maxBuffers)
	var stats IOStats
	w := NewWriter(c, rp, nil, nil, &stats)
	for i, v := range vals {
		w.ProcessElement(v, int64(i))
	}
	w.Flush()
	var out [][]byte
	for {
		_, b, ok := g.Poll()
		if !ok {
			return out
		}
		out = append(out, append([]byte(nil), b.Data...))
		b.Recycle()
	}
}

type discardInput[T any] struct{ n int }

func (d *discardInput[T]) ProcessElement(T, int64) { d.n++ }
func (d *discardInput[T]) ProcessWatermark(int64)  {}

// FuzzReaderProcessBuffer feeds arbitrary bytes, cut into arbitrary buffers,
// to one channel of a Reader of tuple.T2[int64, string]. It must not panic,
// and every error must name the reader and the channel.
func FuzzReaderProcessBuffer(f *testing.F) {
	c := codec.MustFor[tuple.T2[int64, string]]()
	vals := []tuple.T2[int64, string]{tuple.Of2[int64](1, "a"), tuple.Of2[int64](-7, ""), tuple.Of2[int64](1<<40, strings.Repeat("x", 200)), tuple.Of2[int64](3, "end")}
	valid := encodeBuffers(c, vals, 64, 64)
	for _, cuts := range [][]byte{{64, 64, 64, 64, 64}, {1, 2, 3}, {}} {
		var all []byte
		for _, b := range valid {
			all = append(all, b...)
		}
		f.Add(all, cuts, uint8(1))
	}
	f.Add(valid[0], []byte{}, uint8(0))
	f.Add([]byte{0x03, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff}, []byte{13}, uint8(2))
	f.Add([]byte{0x12, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, []byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, data, cuts []byte, chSel uint8) {
		const channels = 3
		ch := int(chSel) % channels
		in := &discardInput[tuple.T2[int64, string]]{}
		var stats IOStats
		r := NewReader(c, Input[tuple.T2[int64, string]](in), channels, &stats, "fuzzed (1/1)")
		wantPrefix := fmt.Sprintf("fuzzed (1/1), channel %d: ", ch)
		var bufs [][]byte
		for _, k := range cuts {
			n := min(int(k), len(data))
			bufs = append(bufs, data[:n:n])
			data = data[n:]
		}
		bufs = append(bufs, data)
		for _, b := range bufs {
			if err := r.ProcessBuffer(ch, b); err != nil {
				if !strings.HasPrefix(err.Error(), wantPrefix) {
					t.Fatalf("error does not name the channel: %v", err)
				}
				return
			}
		}
		if err := r.ChannelEnded(ch); err != nil && !strings.HasPrefix(err.Error(), wantPrefix) {
			t.Fatalf("error does not name the channel: %v", err)
		}
		if int64(in.n) != stats.RecordsIn {
			t.Fatalf("passed on %d records, counted %d", in.n, stats.RecordsIn)
		}
	})
}

func TestReaderErrorsNameChannel(t *testing.T) {
	c := codec.MustFor[tuple.T2[int64, string]]()
	in := &discardInput[tuple.T2[int64, string]]{}
	var stats IOStats
	r := NewReader(c, Input[tuple.T2[int64, string]](in), 2, &stats, "join (2/4)")
	// A 9-byte record: an int64 and a string whose length says 5 but has none.
	bad := []byte{9 << 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5}
	if err := r.ProcessBuffer(1, bad); err == nil || !strings.Contains(err.Error(), "join (2/4), channel 1:") {
		t.Fatalf("decode error: %v", err)
	}
	// Trailing bytes the codec did not use.
	valid := encodeBuffers(c, []tuple.T2[int64, string]{tuple.Of2[int64](1, "ab")}, 64, 1)[0]
	extra := []byte{(12 << 1) | 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	extra = append(extra, valid[12:]...)
	extra = append(extra, 0xee)
	if err := r.ProcessBuffer(0, extra); err == nil || !strings.Contains(err.Error(), "channel 0:") {
		t.Fatalf("trailing bytes: %v", err)
	}
	// A channel that ends in the middle of a record.
	r2 := NewReader(c, Input[tuple.T2[int64, string]](in), 2, &stats, "join (2/4)")
	if err := r2.ProcessBuffer(1, valid[:len(valid)-1]); err != nil {
		t.Fatal(err)
	}
	if err := r2.ChannelEnded(0); err != nil {
		t.Fatalf("channel 0 had nothing open: %v", err)
	}
	if err := r2.ChannelEnded(1); err == nil || !strings.Contains(err.Error(), "join (2/4), channel 1:") {
		t.Fatalf("cut-off record: %v", err)
	}
}
