// Package clock injects time into the engine, so timers, TTL and timeouts can be
// driven by tests instead of the wall clock.
package clock

import (
	"sync"
	"time"
)

// Clock tells the current processing time.
type Clock interface {
	// NowMillis is the current processing time in milliseconds since the epoch.
	NowMillis() int64
}

// System is the wall clock.
type System struct{}

// NowMillis implements Clock.
func (System) NowMillis() int64 { return time.Now().UnixMilli() }

// Manual is a clock that only moves when told to. It is safe for concurrent use.
type Manual struct {
	mu  sync.Mutex // guards now
	now int64
}

// NewManual returns a manual clock starting at the given time.
func NewManual(startMillis int64) *Manual { return &Manual{now: startMillis} }

// NowMillis implements Clock.
func (m *Manual) NowMillis() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d milliseconds.
func (m *Manual) Advance(d int64) {
	m.mu.Lock()
	m.now += d
	m.mu.Unlock()
}

// Set moves the clock to t milliseconds since the epoch.
func (m *Manual) Set(t int64) {
	m.mu.Lock()
	m.now = t
	m.mu.Unlock()
}
