package task

import (
	"testing"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
)

func TestSourceBarrier(t *testing.T) {
	opts := func(unaligned bool, timeout int64) protocol.CheckpointOptions {
		return protocol.CheckpointOptions{Unaligned: unaligned, AlignedTimeout: timeout}
	}
	for _, c := range []struct {
		name string
		o    protocol.CheckpointOptions
		now  int64
		want network.Barrier
	}{
		{"aligned", opts(false, 0), 1000, network.Barrier{ID: 3, Timestamp: 1000}},
		{"aligned ignores a timeout", opts(false, 50), 1000, network.Barrier{ID: 3, Timestamp: 1000}},
		{"unaligned", opts(true, 0), 1000, network.Barrier{ID: 3, Timestamp: 1000, Unaligned: true}},
		{"starts aligned", opts(true, 50), 1010, network.Barrier{ID: 3, Timestamp: 1000, AlignedTimeout: 50}},
		{"at the timeout", opts(true, 50), 1050, network.Barrier{ID: 3, Timestamp: 1000, AlignedTimeout: 50}},
		{"timed out before the source", opts(true, 50), 1051, network.Barrier{ID: 3, Timestamp: 1000, Unaligned: true}},
	} {
		got := sourceBarrier(protocol.TriggerCheckpoint{ID: 3, Timestamp: 1000, Options: c.o}, c.now)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
