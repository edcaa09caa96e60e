package timers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// registerRecover registers an event-time timer and returns the
// *budget.Error it panicked with, if any.
func registerRecover(s *Service, ts int64) (err *budget.Error) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if err, ok = r.(*budget.Error); !ok {
				panic(r)
			}
		}
	}()
	s.RegisterEventTime(ts)
	return nil
}

// TestMemoryBoundsTimers registers distinct timers under a small Memory
// until one fails, and checks the failure names the bound and leaves the
// registered timers as they were.
func TestMemoryBoundsTimers(t *testing.T) {
	const limit = 1 << 20
	m := budget.New(limit)
	s := New(keygroup.Range{Start: 0, End: maxPar - 1})
	s.UseMemory(m)
	key := []byte("some-key-of-16-b")
	s.SetCurrentKey(key, kgOf(string(key)))
	s.SetCurrentNamespace([]byte("window-1"))
	per := timerBytes(uint32(1 + len(key) + len("window-1")))
	var merr *budget.Error
	n := 0
	for ; n < 10*limit/int(per) && merr == nil; n++ {
		merr = registerRecover(s, int64(n)*1000)
	}
	if merr == nil {
		t.Fatalf("%d timers of %d bytes each registered under a bound of %d bytes", n, per, limit)
	}
	n-- // the last failed
	if merr.State != "timers (event time)" || !strings.Contains(merr.Error(), "HeapStateMemory") ||
		!strings.Contains(merr.Error(), "--heap-state-memory") {
		t.Errorf("error %q, state %q", merr, merr.State)
	}
	if ev, _ := s.Len(); ev != n {
		t.Errorf("Len = %d after %d registrations, want %d", ev, n+1, n)
	}
	if int64(n)*per > limit || int64(n+1)*per <= limit-2*(64<<10) {
		t.Errorf("%d timers of %d bytes registered under %d bytes", n, per, limit)
	}
	if m.Used() > limit {
		t.Errorf("Used = %d > limit %d", m.Used(), limit)
	}
	s.Release()
	if m.Used() != 0 {
		t.Errorf("Used = %d after Release", m.Used())
	}
}

// TestMemoryGivenBack registers, deletes and fires timers of both domains
// and checks that the Memory holds what the live timers are counted for
// (plus at most two chunks per domain), and nothing after Release.
func TestMemoryGivenBack(t *testing.T) {
	m := budget.New(1 << 40)
	s := New(keygroup.Range{Start: 0, End: maxPar - 1})
	s.UseMemory(m)
	const keys, perKey = 2000, 20
	idLen := func(k int) uint32 { return uint32(1 + len(fmt.Sprint("k", k))) }
	var want int64 // what the live timers (and deleted ones still queued) are counted for
	check := func(when string) {
		t.Helper()
		if u := m.Used(); u < want || u > want+4*(64<<10) {
			t.Errorf("%s: Used = %d, want %d and at most 4 chunks more", when, u, want)
		}
	}
	for k := range keys {
		key := fmt.Sprint("k", k)
		s.SetCurrentKey([]byte(key), kgOf(key))
		for i := range perKey {
			s.RegisterEventTime(int64(i))
			s.RegisterProcessingTime(int64(i))
			s.RegisterEventTime(int64(i)) // a duplicate counts nothing
			want += 2 * timerBytes(idLen(k))
		}
	}
	check("registered")
	// Delete the event-time timers at odd times: counted until their heap
	// entries are dropped, which firing does.
	for k := range keys {
		key := fmt.Sprint("k", k)
		s.SetCurrentKey([]byte(key), kgOf(key))
		for i := 1; i < perKey; i += 2 {
			s.DeleteEventTime(int64(i))
		}
	}
	check("deleted")
	s.AdvanceWatermark(perKey/2-1, func(Timer) {})
	for k := range keys {
		want -= perKey / 2 * timerBytes(idLen(k))
	}
	check("half of the event-time timers fired or dropped")
	s.AdvanceWatermark(perKey, func(Timer) {})
	s.FireProcessingTime(perKey, func(Timer) {})
	want = 0
	check("all fired")
	if ev, pr := s.Len(); ev != 0 || pr != 0 {
		t.Fatalf("Len = %d, %d", ev, pr)
	}
	s.Release()
	if u := m.Used(); u != 0 {
		t.Errorf("Used = %d after Release, want 0", u)
	}
}
