package file

import (
	"math"
	"time"

	"github.com/weirhq/weir/clock"
)

// throttle limits a reader to its share of a source's rate, by processing
// time: by elapsed ms, floor(elapsed*perMs)+1 lines are due.
type throttle struct {
	clock   clock.Clock
	perMs   float64 // this reader's share; 0: no limit
	startMs int64
	emitted int64
}

func newThrottle(c clock.Clock, ratePerSecond float64, parallelism int) throttle {
	t := throttle{clock: c}
	if ratePerSecond > 0 && !math.IsInf(ratePerSecond, 1) {
		t.perMs = max(ratePerSecond/float64(parallelism)/1000, math.SmallestNonzeroFloat64)
		t.startMs = c.NowMillis()
	}
	return t
}

// allowed returns how many lines may go now (at most n), or, when none may,
// how long to wait.
func (t *throttle) allowed(n int) (int, time.Duration) {
	if t.perMs == 0 {
		return n, 0
	}
	elapsed := float64(t.clock.NowMillis() - t.startMs)
	due := math.Floor(elapsed*t.perMs) + 1 - float64(t.emitted)
	if due < 1 {
		wait := math.Ceil(float64(t.emitted)/t.perMs - elapsed)
		return 0, time.Duration(max(min(wait, 60_000), 1)) * time.Millisecond
	}
	return int(min(float64(n), due)), 0
}

func (t *throttle) took(n int) { t.emitted += int64(n) }
