package clock

import (
	"testing"
	"time"
)

func TestManualTimersFireInOrder(t *testing.T) {
	m := NewManual(1000)
	a, b, c := m.NewTimer(30*time.Millisecond), m.NewTimer(10*time.Millisecond), m.NewTimer(20*time.Millisecond)
	if !c.Stop() || c.Stop() {
		t.Fatal("Stop of a pending timer must report true once")
	}
	m.Advance(9)
	select {
	case <-b.C():
		t.Fatal("fired early")
	default:
	}
	m.Advance(1)
	if got := <-b.C(); got.UnixMilli() != 1010 {
		t.Fatalf("b fired at %d", got.UnixMilli())
	}
	if m.Pending() != 1 {
		t.Fatalf("pending %d, want 1", m.Pending())
	}
	m.Set(2000)
	if got := <-a.C(); got.UnixMilli() != 2000 || a.Stop() {
		t.Fatalf("a fired at %d", got.UnixMilli())
	}
	select {
	case <-c.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if z := m.NewTimer(0); (<-z.C()).UnixMilli() != 2000 {
		t.Fatal("a zero timer must fire at once")
	}
	if m.NowMillis() != 2000 {
		t.Fatal(m.NowMillis())
	}
}
