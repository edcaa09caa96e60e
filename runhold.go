package weir

import (
	"unsafe"

	"github.com/weirhq/weir/internal/prefetch"
)

// runHold holds back the elements of a run that a Reader hands a keyed
// operator (operator.RunEnder) and has them processed together, after the
// cache lines of their keys' state entries were prefetched, so that the
// cache misses of a run overlap instead of stalling the loop one by one.
// keyedProcessOp and slicedOp use it; each says which lines to prefetch
// and how to process a held element (their EndRun).
//
// runs: a Reader feeds the operator and its state backend can name the
// cache lines of a key's entries (spi.DirectStore, spi.DirectTable).
// hold: runs, and the state had at least holdMinEntries entries when last
// checked (below that it stays in the cache and the extra pass only
// costs). Every event that may observe the state or the output
// (watermarks, barriers, timers, the end of input) must come after
// EndRun, which processes all held elements.
//
// X is what an operator keeps per held element besides the element, its
// timestamp and its key (slicedOp: the first half of its accumulator's
// lookup); struct{} for none.
type runHold[K comparable, T, X any] struct {
	runs, hold bool
	pend       []held[K, T, X] // capacity runLen
	runLen     int
	lines      []uintptr // EndRun's prefetches
}

// held is an element held back. x comes first: a zero-size last field
// would be padded.
type held[K comparable, T, X any] struct {
	x   X
	v   T
	ts  int64
	key K
}

// runBytes bounds what a run of held-back elements takes, with the state
// slots it prefetches, so that they stay in the L1 cache (48 KiB on the
// machines measured) while the run is processed: longer runs overlap more
// misses, up to what the cache holds.
const runBytes = 10 << 10

// runLenFor is the run length of an operator whose held-back elements take
// elem bytes each and whose state slots for one element take slots bytes:
// as many as fit in runBytes, at least 16 and at most 64.
func runLenFor(elem, slots uintptr) int {
	lines := (slots + 63) &^ 63
	return int(min(64, max(16, runBytes/(elem+lines))))
}

// holdMinEntries is the state size (entries of all keys and namespaces)
// from which elements are held back: some 0.7 MB of heap table slots, a
// third of a core's L2 cache. An operator sets runHold.hold to runs &&
// entries >= holdMinEntries, counting the entries only with runs. (A
// variable so that tests hold elements back on small states; see
// export_test.go.)
var holdMinEntries = 1 << 14

// start sizes the runs for state slots of slotBytes per element, if runs
// is set.
func (r *runHold[K, T, X]) start(slotBytes uintptr) {
	if r.runs {
		r.runLen = runLenFor(unsafe.Sizeof(held[K, T, X]{}), slotBytes)
		r.pend = make([]held[K, T, X], 0, r.runLen)
	}
}

// add holds an element back and says whether the run is full (EndRun is
// due). It writes the element's fields in place, as EndRun sets x before
// it reads it: a composite literal would zero and copy the whole element.
func (r *runHold[K, T, X]) add(v T, ts int64, key K) bool {
	n := len(r.pend) + 1
	r.pend = r.pend[:n]
	p := &r.pend[n-1]
	p.v, p.ts, p.key = v, ts, key
	return n == r.runLen
}

// prefetch prefetches lines, which the caller appended to r.lines[:0],
// and keeps the buffer for the next run.
func (r *runHold[K, T, X]) prefetch(lines []uintptr) {
	prefetch.Lines(lines)
	r.lines = lines
}

// done drops the processed run, letting go of what its elements reference.
func (r *runHold[K, T, X]) done() {
	clear(r.pend)
	r.pend = r.pend[:0]
}
