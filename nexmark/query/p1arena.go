package query

import (
	"sync"
	"unsafe"
)

// p1ArenaBlock is how many bytes a p1Arena allocates at a time.
const p1ArenaBlock = 64 << 10

// p1Arena copies byte slices into strings carved out of large blocks: one
// allocation per block instead of one per string, and one object for the
// garbage collector to find instead of hundreds. A block's bytes are never
// written again once a string holds them (strings only take unused
// capacity), and a block lives as long as any of its strings: for strings
// that are kept together (q20's bids, all kept in state for good) that
// costs nothing.
type p1Arena struct{ buf []byte }

// p1Arenas are the arenas of the goroutines decoding at a time (a codec is
// shared by the subtasks that use it).
var p1Arenas = sync.Pool{New: func() any { return new(p1Arena) }}

// p1String returns b as a string carved from an arena of p1Arenas.
func p1String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > p1ArenaBlock/8 {
		return string(b)
	}
	a := p1Arenas.Get().(*p1Arena)
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, p1ArenaBlock)
	}
	n := len(a.buf)
	a.buf = append(a.buf, b...)
	s := unsafe.String(&a.buf[n], len(b))
	p1Arenas.Put(a)
	return s
}
