package coordinator

import (
	"strings"
	"testing"
)

// TestQueueLimit fills the request queue: one request more is rejected, and
// the queued ones trigger in order as slots free.
func TestQueueLimit(t *testing.T) {
	c := New(Settings{}, 1, []TaskID{0}, 1, 0)
	out := c.TriggerNow(0, Savepoint)
	if len(out.Trigger) != 1 || out.Trigger[0].ID != 1 {
		t.Fatalf("first request: %+v", out)
	}
	for i := range MaxQueuedRequests {
		kind := Final
		if i%2 == 0 {
			kind = Savepoint
		}
		if out := c.TriggerNow(1, kind); out.HasActions() || len(out.Notes) != 1 {
			t.Fatalf("request %d: %+v", i, out)
		}
	}
	out = c.TriggerNow(2, Final)
	if len(out.Rejected) != 1 || !strings.Contains(out.Rejected[0].Reason, "too many queued") {
		t.Fatalf("request beyond the limit: %+v", out)
	}
	if got := c.Stats().Queued; got != MaxQueuedRequests {
		t.Fatalf("queued %d, want %d", got, MaxQueuedRequests)
	}
	out = c.Ack(3, 1, 0)
	if len(out.Finalize) != 1 || len(out.Trigger) != 1 || out.Trigger[0].ID != 2 || out.Trigger[0].Kind != Savepoint {
		t.Fatalf("slot freed: %+v", out)
	}
	out = c.Decline(4, 2, 0, "not ready", false)
	if len(out.Trigger) != 1 || out.Trigger[0].ID != 3 || out.Trigger[0].Kind != Final {
		t.Fatalf("second slot freed: %+v", out)
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestProgrammingErrors: impossible arguments panic.
func TestProgrammingErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"invalid settings":    func() { New(Settings{Interval: -1}, 1, nil, 1, 0) },
		"no tasks":            func() { New(Settings{}, 0, nil, 1, 0) },
		"source out of range": func() { New(Settings{}, 2, []TaskID{2}, 1, 0) },
		"next id 0":           func() { New(Settings{}, 1, nil, 0, 0) },
		"trigger periodic":    func() { New(Settings{}, 1, nil, 1, 0).TriggerNow(0, Periodic) },
		"resume no tasks": func() {
			c := New(Settings{}, 1, nil, 1, 0)
			c.Suspend(0)
			c.Resume(1, 0, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}

// TestOutputIsOwned: an Output and the query results stay valid after later
// events (the caller may act on them outside its lock).
func TestOutputIsOwned(t *testing.T) {
	c := New(Settings{Interval: 100, MaxConcurrent: 2}, 2, []TaskID{0, 1}, 1, 0)
	out := c.Tick(100)
	pending := c.Pending()
	c.Ack(150, 1, 0)
	c.Tick(200)
	if out.Trigger[0].ID != 1 || pending[0].AckTime[0] != -1 || len(pending) != 1 {
		t.Fatalf("earlier results changed: %+v %+v", out, pending)
	}
	retained := c.Retained()
	c.Ack(210, 1, 1)
	c.Finalized(220, 1, nil)
	if len(retained) != 0 {
		t.Fatalf("Retained result changed: %v", retained)
	}
	if got := c.Settings(); got.Timeout != DefaultTimeout || got.HistorySize != DefaultHistorySize {
		t.Fatalf("settings without defaults: %+v", got)
	}
}
