package operator

import (
	"math"
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
	// InputWatermark is the task's combined input watermark (the minimum
	// over its inputs), OutputWatermark the last one its writers sent.
	// Both start at math.MinInt64 (see SetWatermarks).
	InputWatermark, OutputWatermark int64
	// OutputIdle: the task's outputs are idle (WatermarkStatus).
	OutputIdle bool
	// Metrics are the operators' own counters (Context.Counter), published
	// with the fields above.
	Metrics Metrics
	// Clock measures the waits (nil: the system clock).
	Clock clock.Clock
	// Yield asks the readers to stop after the current record: the task has
	// something to do first (a priority event or mail arrived, or an output
	// ran out of buffers). The task clears it when it takes over.
	Yield atomic.Bool

	published [10]atomic.Int64
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
	// Watermarks are stored with the sign bit flipped, so that the zero
	// value of a never-published snapshot reads as math.MinInt64.
	s.published[7].Store(s.InputWatermark ^ math.MinInt64)
	s.published[8].Store(s.OutputWatermark ^ math.MinInt64)
	var idle int64
	if s.OutputIdle {
		idle = 1
	}
	s.published[9].Store(idle)
	s.Metrics.publish()
}

// Unpublished reports whether a counter, watermark, the idle status or an
// operator metric changed since the last Publish (times are left out: they
// change whenever the clock does). The task asks before it blocks, so that
// the last changes get published even when nothing wakes it again; it
// costs a few atomic loads per wait, nothing per record.
func (s *IOStats) Unpublished() bool {
	idle := int64(0)
	if s.OutputIdle {
		idle = 1
	}
	return s.published[0].Load() != s.RecordsIn || s.published[1].Load() != s.RecordsOut ||
		s.published[2].Load() != s.BytesIn || s.published[3].Load() != s.BytesOut ||
		s.published[7].Load() != s.InputWatermark^math.MinInt64 || s.published[8].Load() != s.OutputWatermark^math.MinInt64 ||
		s.published[9].Load() != idle || s.Metrics.unpublished()
}

// ResetWatermarks sets both watermarks to math.MinInt64 (nothing seen yet).
func (s *IOStats) ResetWatermarks() {
	s.InputWatermark, s.OutputWatermark = math.MinInt64, math.MinInt64
}

// StatsSnapshot is a copy of published counters.
type StatsSnapshot struct {
	RecordsIn, RecordsOut, BytesIn, BytesOut int64
	BackPressuredNanos, IdleNanos, BusyNanos int64
	InputWatermark, OutputWatermark          int64
	OutputIdle                               bool
}

// Snapshot returns the last published counters; safe from any goroutine.
func (s *IOStats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		RecordsIn: s.published[0].Load(), RecordsOut: s.published[1].Load(),
		BytesIn: s.published[2].Load(), BytesOut: s.published[3].Load(),
		BackPressuredNanos: s.published[4].Load(), IdleNanos: s.published[5].Load(),
		BusyNanos:      s.published[6].Load(),
		InputWatermark: s.published[7].Load() ^ math.MinInt64, OutputWatermark: s.published[8].Load() ^ math.MinInt64,
		OutputIdle: s.published[9].Load() != 0,
	}
}
