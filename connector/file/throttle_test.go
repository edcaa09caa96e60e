package file

import (
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
)

func TestThrottle(t *testing.T) {
	c := clock.NewManual(1000)
	th := newThrottle(c, 1000, 2) // 500 lines/s for this reader: one every 2 ms
	if n, _ := th.allowed(256); n != 1 {
		t.Fatalf("at start %d lines allowed, want 1", n)
	}
	th.took(1)
	if n, wait := th.allowed(256); n != 0 || wait != 2*time.Millisecond {
		t.Fatalf("right after: %d lines, wait %v; want 0 and 2ms", n, wait)
	}
	c.Advance(100)
	if n, _ := th.allowed(256); n != 50 {
		t.Fatalf("after 100 ms: %d lines, want 50", n)
	}
	free := newThrottle(c, 0, 1)
	if n, _ := free.allowed(256); n != 256 {
		t.Fatalf("unlimited: %d", n)
	}
}
