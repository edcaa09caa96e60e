package taskmanager

import (
	"testing"

	"github.com/weirhq/weir/internal/network"
)

// TestGateFloatingPool: a task's remote channels share one pool of the
// job's FloatingBuffers, taken from the TaskManager's network memory only
// while it has room (no minimum reserved), and given back when the task's
// wiring closes; a job without floating buffers gets none.
func TestGateFloatingPool(t *testing.T) {
	tm := &TaskManager{budget: network.NewBudget(10 << 10)}
	job := &Job{FloatingBuffers: 3, BufferSize: 1 << 10}
	w := &wiring{}
	p, err := w.floatingPool(tm, job)
	if err != nil || p == nil {
		t.Fatalf("floatingPool: %v, %v", p, err)
	}
	if again, _ := w.floatingPool(tm, job); again != p {
		t.Error("a second remote channel of the gate got another pool")
	}
	if u := tm.budget.Used(); u != 0 {
		t.Errorf("the pool reserved %d bytes before any use", u)
	}
	var out []*network.Buffer
	for b := p.TryRequest(); b != nil; b = p.TryRequest() {
		out = append(out, b)
	}
	if len(out) != 3 || tm.budget.Used() != 3<<10 {
		t.Errorf("took %d floating buffers, %d bytes of network memory; want 3 and %d", len(out), tm.budget.Used(), 3<<10)
	}
	for _, b := range out {
		b.Recycle()
	}
	w.close()
	if u := tm.budget.Used(); u != 0 {
		t.Errorf("%d bytes of network memory still taken after the wiring closed", u)
	}
	if p, _ := (&wiring{}).floatingPool(tm, &Job{BufferSize: 1 << 10}); p != nil {
		t.Error("a job without floating buffers got a pool")
	}
	// A budget without room: the pool exists and gives nothing.
	full := &TaskManager{budget: network.NewBudget(512)}
	if p, err := (&wiring{}).floatingPool(full, job); err != nil || p.TryRequest() != nil {
		t.Errorf("with no network memory free: %v, %v; want a pool that gives nothing", p, err)
	}
}
