package operator

import (
	"sync/atomic"

	"github.com/weirhq/weir/clock"
)

// IOStats counts what one subtask reads and writes. The task goroutine owns
// the plain fields and updates them per record; Publish copies them into the
// atomic snapshot that metrics and the REST API read from other goroutines.
type IOStats struct {
	RecordsIn, RecordsOut int64
	BytesIn, BytesOut     int64
	// BackPressuredNanos is time spent waiting for an output buffer.
	BackPressuredNanos int64
	// IdleNanos is time spent waiting for input; BusyNanos the rest.
	IdleNanos, BusyNanos int64
	// Clock measures the waits (nil: the system clock).
	Clock clock.Clock
	// Yield asks the readers to stop after the current record: the task has
	// something to do first (a priority event or mail arrived, or an output
	// ran out of buffers). The task clears it when it takes over.
	Yield atomic.Bool

	published [7]atomic.Int64
}

// Publish makes the current counters visible to Snapshot.
func (s *IOStats) Publish() {
	s.published[0].Store(s.RecordsIn)
	s.published[1].Store(s.RecordsOut)
	s.published[2].Store(s.BytesIn)
	s.published[3].Store(s.BytesOut)
	s.published[4].Store(s.BackPressuredNanos)
	s.published[5].Store(s.IdleNanos)
	s.published[6].Store(s.BusyNanos)
}

// StatsSnapshot is a copy of published counters.
type StatsSnapshot struct {
	RecordsIn, RecordsOut, BytesIn, BytesOut int64
	BackPressuredNanos, IdleNanos, BusyNanos int64
}

// Snapshot returns the last published counters; safe from any goroutine.
func (s *IOStats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		RecordsIn: s.published[0].Load(), RecordsOut: s.published[1].Load(),
		BytesIn: s.published[2].Load(), BytesOut: s.published[3].Load(),
		BackPressuredNanos: s.published[4].Load(), IdleNanos: s.published[5].Load(),
		BusyNanos: s.published[6].Load(),
	}
}
