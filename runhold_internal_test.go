package weir

import (
	"testing"
	"unsafe"
)

// runHold holds elements until a run is full, hands them back in order,
// and lets go of them when done; without runs it sizes no run.
func TestRunHoldRuns(t *testing.T) {
	var r runHold[int64, *int64, struct{}]
	r.start(32) // without runs: nothing sized
	if r.runLen != 0 || r.pend != nil {
		t.Fatalf("start without runs sized a run of %d", r.runLen)
	}
	r.runs = true
	r.start(32)
	want := runLenFor(unsafe.Sizeof(held[int64, *int64, struct{}]{}), 32)
	if r.runLen != want || cap(r.pend) != want {
		t.Fatalf("run length %d (capacity %d), want %d", r.runLen, cap(r.pend), want)
	}
	r.hold = true
	vals := make([]int64, r.runLen)
	for i := range vals {
		vals[i] = int64(i)
		full := r.add(&vals[i], int64(100+i), int64(-i))
		if full != (i == r.runLen-1) {
			t.Fatalf("add %d of a run of %d says full=%v", i+1, r.runLen, full)
		}
	}
	for i, p := range r.pend {
		if p.v != &vals[i] || p.ts != int64(100+i) || p.key != int64(-i) {
			t.Fatalf("held element %d is %+v", i, p)
		}
	}
	backing := r.pend[:cap(r.pend)]
	r.done()
	if len(r.pend) != 0 {
		t.Fatalf("%d elements held after done", len(r.pend))
	}
	for i, p := range backing {
		if p.v != nil {
			t.Fatalf("held element %d still referenced after done", i)
		}
	}
}

// runLenFor keeps a run and its slots within runBytes, between 16 and 64
// elements.
func TestRunLenFor(t *testing.T) {
	for _, c := range []struct {
		elem, slots uintptr
		want        int
	}{{24, 32, 64}, {64, 64, 64}, {100, 32, 62}, {232, 240, 20}, {1000, 1000, 16}} {
		if got := runLenFor(c.elem, c.slots); got != c.want {
			t.Errorf("runLenFor(%d, %d) = %d, want %d", c.elem, c.slots, got, c.want)
		}
	}
}
