package budget

import (
	"errors"
	"testing"
)

// A Charger writes its Memory once per chunk, holds at most two chunks
// more than it counts, fails an Add past the limit counting nothing, and
// gives everything back on Release.
func TestCharger(t *testing.T) {
	const limit = 4 * Chunk
	m := New(limit)
	c := NewCharger(m, "timers (event time)", "its timers")
	c.Add(100)
	if m.Used() != 100+Chunk {
		t.Fatalf("Used = %d after the first Add, want %d", m.Used(), 100+Chunk)
	}
	for c.Used()+100 <= 100+Chunk {
		c.Add(100)
	}
	if m.Used() != 100+Chunk {
		t.Fatalf("Used = %d with %d counted, want one chunk taken", m.Used(), c.Used())
	}
	for c.Used()+1000 <= limit {
		c.Add(1000)
		if m.Used() < c.Used() || m.Used() > limit {
			t.Fatalf("Used = %d with %d counted, limit %d", m.Used(), c.Used(), limit)
		}
	}
	before := c.Used()
	func() {
		defer func() {
			var me *Error
			if err, _ := recover().(error); !errors.As(err, &me) || me.State != "timers (event time)" {
				t.Fatalf("Add past the limit: %v, want a *Error of the timers", err)
			}
		}()
		c.Add(limit)
	}()
	if c.Used() != before || m.Used() > limit {
		t.Fatalf("after a failed Add: counted %d (was %d), Used %d", c.Used(), before, m.Used())
	}
	for c.Used() >= 1000 {
		c.Sub(1000)
		if m.Used()-c.Used() > 2*Chunk {
			t.Fatalf("Used = %d with %d counted: more than two chunks spare", m.Used(), c.Used())
		}
	}
	c.Release()
	if m.Used() != 0 {
		t.Fatalf("Used = %d after Release", m.Used())
	}
	var none Charger // no Budget: counts, bounds nothing
	none.Add(1 << 50)
	none.Sub(1 << 50)
	none.Release()
}
