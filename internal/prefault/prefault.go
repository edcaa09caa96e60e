package prefault

import "unsafe"

// pageSize is the smallest page size of the machines Weir runs on; on a
// machine with larger pages the extra writes land in pages already
// faulted in, which costs little.
const pageSize = 4096

// Fresh writes a zero byte into every page that the backing array of s
// spans, so that the first access to each is a write. Small arrays too:
// Go carves them from fresh pages as well, and one store costs little.
// s must be freshly made (all zero) and not yet shared with another
// goroutine: the write does not change its contents, but it is a write.
func Fresh[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	// The first byte of the array, then the first of each later page.
	*(*byte)(p) = 0
	first := (uintptr(p) + pageSize) &^ (pageSize - 1)
	for off := first - uintptr(p); off < n; off += pageSize {
		*(*byte)(unsafe.Add(p, off)) = 0
	}
}
