package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the current processing time and makes timers on it.
type Clock interface {
	// NowMillis is the current processing time in milliseconds since the epoch.
	NowMillis() int64
	// Now is the current time, for measuring durations.
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C receives the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
}

// System is the wall clock.
type System struct{}

// NowMillis implements Clock.
func (System) NowMillis() int64 { return time.Now().UnixMilli() }

// Now implements Clock.
func (System) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (System) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }

// Since is c.Now().Sub(t).
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Manual is a clock that only moves when told to; its timers fire when it
// passes their deadlines. It is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex // guards now and timers
	now    time.Time
	timers []*manualTimer // pending, unordered
}

// NewManual returns a manual clock starting at the given time (ms since the epoch).
func NewManual(startMillis int64) *Manual { return &Manual{now: time.UnixMilli(startMillis)} }

// NowMillis implements Clock.
func (m *Manual) NowMillis() int64 { return m.Now().UnixMilli() }

// Now implements Clock.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer implements Clock. A timer of zero or negative duration fires at once.
func (m *Manual) NewTimer(d time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, at: m.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- m.now
		t.fired = true
		return t
	}
	m.timers = append(m.timers, t)
	return t
}

// Advance moves the clock forward by d milliseconds, firing due timers in
// deadline order.
func (m *Manual) Advance(d int64) { m.AdvanceDuration(time.Duration(d) * time.Millisecond) }

// AdvanceDuration moves the clock forward by d.
func (m *Manual) AdvanceDuration(d time.Duration) {
	m.mu.Lock()
	m.setLocked(m.now.Add(d))
	m.mu.Unlock()
}

// Set moves the clock to t milliseconds since the epoch (never backwards for
// timers: ones already fired stay fired).
func (m *Manual) Set(t int64) {
	m.mu.Lock()
	m.setLocked(time.UnixMilli(t))
	m.mu.Unlock()
}

// Pending is the number of timers that have not fired or been stopped.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

func (m *Manual) setLocked(t time.Time) {
	m.now = t
	sort.Slice(m.timers, func(i, j int) bool { return m.timers[i].at.Before(m.timers[j].at) })
	keep := m.timers[:0]
	for _, tm := range m.timers {
		if !tm.at.After(t) {
			tm.fired = true
			tm.c <- t // buffered, never blocks: a timer fires once
		} else {
			keep = append(keep, tm)
		}
	}
	clear(m.timers[len(keep):])
	m.timers = keep
}

type manualTimer struct {
	m     *Manual
	at    time.Time
	c     chan time.Time
	fired bool // guarded by m.mu
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range t.m.timers {
		if x == t {
			t.m.timers = append(t.m.timers[:i], t.m.timers[i+1:]...)
			t.fired = true // stopped: never fires
			return true
		}
	}
	return false
}
