package prefault

import (
	"fmt"
	"testing"
	"unsafe"
)

// Fresh writes inside the array only: bytes around it, set to 0xff, stay
// so, for arrays of lengths around one and three pages, starting at the
// buffer's start, near the end of its first 4 KiB and past it.
func TestFreshStaysInside(t *testing.T) {
	type elem struct {
		a uint64
		b uint32
	} // 16 bytes with padding
	esz := int(unsafe.Sizeof(elem{}))
	buf := make([]byte, 5*pageSize+3*esz)
	for _, off := range []int{0, 8, 24, pageSize - 8, pageSize - 16, pageSize} { // aligned for elem
		for _, n := range []int{0, 1, 2, pageSize/esz - 1, pageSize / esz, pageSize/esz + 1, 3*pageSize/esz + 5} {
			t.Run(fmt.Sprintf("off%d/n%d", off, n), func(t *testing.T) {
				for i := range buf {
					buf[i] = 0xff
				}
				end := off + n*esz
				clear(buf[off:end])
				s := unsafe.Slice((*elem)(unsafe.Pointer(&buf[off])), n)
				Fresh(s)
				for i, c := range buf {
					inside := i >= off && i < end
					if inside && c != 0 || !inside && c != 0xff {
						t.Fatalf("byte %d is %#x after Fresh of %d elements at offset %d", i, c, n, off)
					}
				}
			})
		}
	}
}

// Fresh writes the first byte of every page the array spans: a zeroed
// array marked 0xff at each of those bytes comes back all zero.
func TestFreshTouchesEveryPage(t *testing.T) {
	for _, off := range []int{0, 5, pageSize - 3} {
		buf := make([]byte, 4*pageSize)
		s := buf[off : off+3*pageSize : off+3*pageSize]
		base := uintptr(unsafe.Pointer(&s[0]))
		var want []int
		want = append(want, 0)
		for i := range s {
			if (base+uintptr(i))%pageSize == 0 {
				want = append(want, i)
			}
		}
		for _, i := range want {
			s[i] = 0xff
		}
		Fresh(s)
		for _, i := range want {
			if s[i] != 0 {
				t.Fatalf("offset %d: byte %d (a page's first, or the array's) not written", off, i)
			}
		}
	}
}
