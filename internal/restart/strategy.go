package restart

import (
	"fmt"
	"math"
	"time"
)

// Decision is a Strategy's answer to one failure.
type Decision struct {
	// Restart is true if the job should restart after Delay, false if it
	// must fail for good.
	Restart bool
	// Delay is the wait before the restart, counted from the failure's now.
	// It is 0 when Restart is false.
	Delay time.Duration
	// Reason explains the decision for logs and the REST API; it names the
	// strategy and, when giving up, the Flink setting whose limit was reached
	// and its value. Never empty.
	Reason string
}

// Strategy decides, failure by failure, whether a job restarts and when.
//
// A Strategy is a deterministic state machine: it reads no clock and starts
// no goroutine, and its only randomness is the function given to New. It is
// not safe for concurrent use; the job's owner goroutine calls it.
//
// Once it gives up, every later call returns that same decision: a job that
// has failed for good stays failed.
type Strategy interface {
	// OnFailure records a failure at now (epoch milliseconds) and decides:
	// restart after a delay, or give up with a reason that names the strategy
	// and its limit (e.g. "restart-strategy.fixed-delay.attempts (3)
	// exhausted"). now should not decrease between calls; a smaller now is
	// taken as the largest seen so far.
	OnFailure(now int64) Decision
}

// New returns the strategy c selects, starting with no failures recorded.
//
// c must be valid (WithDefaults, then Validate); New panics otherwise, as
// this is a programmer error. rand returns uniform values in [0, 1); it is
// called once per restart by exponential-delay with a jitter factor above 0,
// and New panics if it is nil then. Other strategies never call it, and it
// may be nil for them.
func New(c Config, rand func() float64) Strategy {
	if err := c.Validate(); err != nil {
		panic(fmt.Sprintf("restart.New: invalid Config (call WithDefaults and Validate first): %v", err))
	}
	var d decider
	switch c.Type {
	case None:
		d = noRestart{}
	case FixedDelay:
		d = &fixedDelay{attempts: eff(c.FixedDelayAttempts), delay: eff(c.FixedDelay)}
	case FailureRate:
		d = &failureRate{max: c.MaxFailuresPerInterval, interval: c.FailureRateInterval, delay: eff(c.FailureRateDelay)}
	case ExponentialDelay:
		e := &exponentialDelay{
			initial:    c.InitialBackoff,
			max:        c.MaxBackoff,
			multiplier: c.BackoffMultiplier,
			reset:      c.ResetBackoffThreshold,
			jitter:     eff(c.JitterFactor),
			attempts:   c.AttemptsBeforeResetBackoff,
			rand:       rand,
		}
		if e.jitter > 0 && rand == nil {
			panic("restart.New: exponential-delay with a jitter factor above 0 needs a rand function")
		}
		d = e
	}
	return &strategy{decider: d}
}

// decider is one strategy's rule. decide sees failure times as offsets from
// the epoch that never decrease.
type decider interface {
	decide(t time.Duration) Decision
}

// strategy wraps a decider with what every strategy shares: a clock that does
// not go back, and giving up for good.
type strategy struct {
	decider
	last  time.Duration // largest failure time seen
	over  bool          // gave up; final is the answer from now on
	final Decision
}

func (s *strategy) OnFailure(now int64) Decision {
	if s.over {
		return s.final
	}
	s.last = max(s.last, msToDuration(now))
	d := s.decide(s.last)
	if !d.Restart {
		s.over, s.final = true, d
	}
	return d
}

// msToDuration converts epoch milliseconds to a Duration, saturating instead
// of overflowing (beyond about year 2262).
func msToDuration(ms int64) time.Duration {
	const lim = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(max(ms, -lim), lim)) * time.Millisecond
}

// noRestart is restart-strategy.type none: every failure is final.
type noRestart struct{}

func (noRestart) decide(time.Duration) Decision {
	return Decision{Reason: fmt.Sprintf("%s (%s) allows no restarts", KeyType, None)}
}

// fixedDelay allows attempts restarts in all, each after delay.
type fixedDelay struct {
	attempts int
	delay    time.Duration
	failures int // failures so far, <= attempts while restarting
}

func (f *fixedDelay) decide(time.Duration) Decision {
	if f.failures >= f.attempts {
		return Decision{Reason: fmt.Sprintf("%s (%d) exhausted", KeyFixedDelayAttempts, f.attempts)}
	}
	f.failures++
	return Decision{Restart: true, Delay: f.delay, Reason: fmt.Sprintf(
		"%s: restart %d of %d after %s", FixedDelay, f.failures, f.attempts, formatDuration(f.delay))}
}

// failureRate allows at most max failures in any window of length interval
// (both ends included, as in Flink), each restart after delay.
type failureRate struct {
	max      int
	interval time.Duration
	delay    time.Duration
	// window holds the failure times within interval of the latest, oldest
	// first; at most max+1 long, as the strategy gives up beyond max.
	window []time.Duration
}

func (f *failureRate) decide(t time.Duration) Decision {
	i := 0
	for i < len(f.window) && t-f.window[i] > f.interval {
		i++
	}
	f.window = append(f.window[i:], t)
	n := len(f.window)
	if n > f.max {
		return Decision{Reason: fmt.Sprintf("%s (%d) exceeded: %d failures within %s (%s)",
			KeyFailureRateMaxFailuresPerInterval, f.max, n, KeyFailureRateInterval, formatDuration(f.interval))}
	}
	return Decision{Restart: true, Delay: f.delay, Reason: fmt.Sprintf(
		"%s: failure %d of at most %d within %s; restart after %s",
		FailureRate, n, f.max, formatDuration(f.interval), formatDuration(f.delay))}
}

// exponentialDelay follows Flink's ExponentialDelayRestartBackoffTimeStrategy
// (1.19 and later).
//
// The k-th restart since the last reset (k = 0, 1, ...) waits
// initial*multiplier^k, moved by a uniform jitter of up to jitter times
// itself either way, then clamped to [initial, max]. A failure at least
// reset after the last scheduled restart starts over at k = 0. A failure
// while a restart is still pending (t <= next) is merged into it: it reuses
// that restart and does not count. The strategy gives up when a failure would
// be restart number attempts+1 since the last reset.
type exponentialDelay struct {
	initial, max time.Duration
	multiplier   float64
	reset        time.Duration
	jitter       float64
	attempts     int
	rand         func() float64

	restarts  int           // restarts since the last reset, <= attempts
	next      time.Duration // when the last scheduled restart happens
	scheduled bool          // a restart was ever scheduled (next is valid)
}

func (e *exponentialDelay) decide(t time.Duration) Decision {
	if e.scheduled && t <= e.next {
		return Decision{Restart: true, Delay: e.next - t, Reason: fmt.Sprintf(
			"%s: failure before the pending restart, merged into it (restart in %s)",
			ExponentialDelay, formatDuration(e.next-t))}
	}
	if !e.scheduled || t-e.next >= e.reset {
		e.restarts = 0
	}
	if e.restarts >= e.attempts {
		return Decision{Reason: fmt.Sprintf("%s (%d) exhausted", KeyAttemptsBeforeResetBackoff, e.attempts)}
	}
	d := e.backoff(e.restarts)
	e.next, e.scheduled = t+d, true
	if e.next < t { // overflow: t is near the end of time.Duration's range
		e.next = math.MaxInt64
	}
	e.restarts++
	return Decision{Restart: true, Delay: d, Reason: fmt.Sprintf(
		"%s: restart %d since the backoff reset, after %s", ExponentialDelay, e.restarts, formatDuration(d))}
}

// backoff is the delay of restart k since the last reset, jittered and
// clamped to [initial, max].
func (e *exponentialDelay) backoff(k int) time.Duration {
	// Computed in float64; 1e300 stands in for anything larger (and +Inf),
	// far beyond max, so that the jitter arithmetic stays finite.
	base := min(math.Trunc(float64(e.initial)*math.Pow(e.multiplier, float64(k))), 1e300)
	d := base
	if e.jitter > 0 {
		r := e.rand()
		if !(r >= 0 && r < 1) {
			panic(fmt.Sprintf("restart: rand returned %v, want a value in [0, 1)", r))
		}
		// A uniform whole number of nanoseconds in [-off, off], as Flink draws
		// whole milliseconds.
		off := math.Floor(base * e.jitter)
		d += min(-off+math.Floor(r*(2*off+1)), off)
	}
	switch {
	case d >= float64(e.max):
		return e.max
	case d <= float64(e.initial):
		return e.initial
	}
	return time.Duration(d)
}
