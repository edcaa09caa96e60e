package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesTakesAnyAddress prefetches real, nil and unmapped addresses:
// a prefetch never faults, and Lines must not read what it names.
func TestLinesTakesAnyAddress(t *testing.T) {
	buf := make([]uint64, 1024)
	addrs := []uintptr{0, 1, ^uintptr(0), 0xdead0000}
	for i := range buf {
		addrs = append(addrs, uintptr(unsafe.Pointer(&buf[i])))
	}
	Lines(addrs)
	Lines(nil)
	Lines(addrs[:1])
}
