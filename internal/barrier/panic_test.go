package barrier

import (
	"strings"
	"testing"
)

// TestProgrammerErrors checks that inputs the caller must never produce
// panic, with a message naming the mistake.
func TestProgrammerErrors(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"no channels", "0 input channels", func() { New(0, ExactlyOnce) }},
		{"unknown mode", "unknown mode", func() { New(1, Mode(7)) }},
		{"channel out of range", "channel 3 of 3", func() { New(3, ExactlyOnce).Barrier(1, 3, Barrier{ID: 1}) }},
		{"id not positive", "id 0 is not positive", func() { New(3, AtLeastOnce).CancelMarker(1, 0, 0) }},
		{"barrier from a blocked channel", "channel 0, which is blocked", func() {
			h := New(2, ExactlyOnce)
			h.Barrier(1, 0, Barrier{ID: 1})
			h.Barrier(2, 0, Barrier{ID: 2})
		}},
		{"end of a blocked channel", "channel 0, which is blocked", func() {
			h := New(2, ExactlyOnce)
			h.Barrier(1, 0, Barrier{ID: 1})
			h.EndOfPartition(2, 0)
		}},
		{"after the end", "after its end of partition", func() {
			h := New(2, AtLeastOnce)
			h.EndOfPartition(1, 1)
			h.CancelMarker(2, 1, 1)
		}},
		{"second barrier, unaligned", "second barrier of checkpoint 1 from channel 0", func() {
			h := New(2, ExactlyOnce)
			h.Barrier(1, 0, Barrier{ID: 1, Unaligned: true})
			h.Barrier(2, 0, Barrier{ID: 1, Unaligned: true})
		}},
		{"second barrier, at-least-once", "second barrier of checkpoint 1 from channel 1", func() {
			h := New(2, AtLeastOnce)
			h.Barrier(1, 1, Barrier{ID: 1})
			h.Barrier(2, 1, Barrier{ID: 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}
