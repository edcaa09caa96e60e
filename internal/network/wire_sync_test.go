package network

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/network/wire"
)

// TestWireMirrorsNetwork holds internal/network/wire's mirrors of this
// package equal to it: wire imports only the standard library, so it
// cannot name Kind or PartitionKey itself.
func TestWireMirrorsNetwork(t *testing.T) {
	if wire.KindData != uint8(KindData) {
		t.Errorf("wire.KindData is %d, network.KindData %d", wire.KindData, KindData)
	}
	if last := Kind(wire.NumKinds - 1).String(); strings.HasPrefix(last, "kind(") {
		t.Errorf("wire.NumKinds is %d, but network has no kind %d", wire.NumKinds, wire.NumKinds-1)
	}
	if past := Kind(wire.NumKinds).String(); !strings.HasPrefix(past, "kind(") {
		t.Errorf("network has kind %d (%s), which wire.NumKinds (%d) refuses: raise it", wire.NumKinds, past, wire.NumKinds)
	}
	// The conversion compiles only while both structs have the same fields.
	k := PartitionKey{Job: "j", Edge: 1, Producer: 2, Attempt: 3}
	if PartitionKey(wire.PartitionKey(k)) != k {
		t.Error("PartitionKey does not survive a conversion through wire.PartitionKey")
	}
	NewBufferPool(1, wire.MinBufferSize) // network's smallest buffer is wire's
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("network accepts buffers of %d bytes, below wire.MinBufferSize", wire.MinBufferSize-1)
			}
		}()
		NewBufferPool(1, wire.MinBufferSize-1)
	}()
}

// TestEventsCrossTheWire sends every event kind through wire's encoder and
// decoder and reads it back with network's own decoding: the events fit
// wire.MaxEventSize and cross byte for byte.
func TestEventsCrossTheWire(t *testing.T) {
	br := Barrier{ID: 7, Timestamp: 1700000000000, Unaligned: true, AtLeastOnce: true, Kind: 2, AlignedTimeout: 50, Native: true}
	events := []*Buffer{NewWatermark(-5), NewWatermarkStatus(true), NewBarrier(br), NewCancelCheckpoint(9), NewEndOfPartition(), NewEndOfData()}
	var stream []byte
	for i, e := range events {
		var err error
		stream, err = wire.AppendBuffer(stream, wire.BufferHeader{Channel: 1, Sequence: uint32(i), Kind: uint8(e.Kind), Priority: e.Kind == KindBarrier}, e.Data)
		if err != nil {
			t.Fatalf("%s event: %v", e.Kind, err)
		}
	}
	d, err := wire.NewDecoder(bufio.NewReader(bytes.NewReader(stream)), 1024)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if _, err := d.Next(); err != nil {
			t.Fatalf("%s event: %v", e.Kind, err)
		}
		p, err := d.ReadPayload(make([]byte, 0, wire.MaxEventSize))
		if err != nil {
			t.Fatal(err)
		}
		got := &Buffer{Kind: Kind(d.Buffer().Kind), Data: p}
		if got.Kind != e.Kind || !bytes.Equal(got.Data, e.Data) {
			t.Fatalf("%s event came back as %s % x", e.Kind, got.Kind, got.Data)
		}
	}
	// Spot checks through network's decoders.
	d, _ = wire.NewDecoder(bufio.NewReader(bytes.NewReader(stream)), 1024)
	read := func() *Buffer {
		_, _ = d.Next()
		p, _ := d.ReadPayload(make([]byte, 0, wire.MaxEventSize))
		return &Buffer{Kind: Kind(d.Buffer().Kind), Data: p}
	}
	if wm := read().Watermark(); wm != -5 {
		t.Errorf("watermark %d, want -5", wm)
	}
	if !read().Idle() {
		t.Error("the idle status came back active")
	}
	if got := read().Barrier(); got != br {
		t.Errorf("barrier %+v, want %+v", got, br)
	}
}
