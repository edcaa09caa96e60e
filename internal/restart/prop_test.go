package restart

import (
	"math"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

func trials(t *testing.T) int {
	if testing.Short() {
		return 50
	}
	return 500
}

// flinkFailureRate is Flink's FailureRateRestartBackoffTimeStrategy, line for
// line: a queue of the last max+1 failure times, in milliseconds.
type flinkFailureRate struct {
	max        int
	intervalMS int64
	times      []int64
}

func (f *flinkFailureRate) full() bool { return len(f.times) > f.max }

func (f *flinkFailureRate) notifyFailure(now int64) {
	if f.full() {
		f.times = f.times[1:]
	}
	f.times = append(f.times, now)
}

func (f *flinkFailureRate) canRestart(now int64) bool {
	if f.full() {
		return now-f.times[0] > f.intervalMS
	}
	return true
}

// TestPropertyFailureRateMatchesFlink replays random failure sequences
// through the strategy and through Flink's algorithm.
func TestPropertyFailureRateMatchesFlink(t *testing.T) {
	r := testseed.Rand(t, 1)
	for trial := range trials(t) {
		maxF := 1 + r.IntN(6)
		intervalMS := int64(1 + r.IntN(20_000))
		c := Config{Type: FailureRate, MaxFailuresPerInterval: maxF, FailureRateInterval: time.Duration(intervalMS) * time.Millisecond}
		s := mustNew(t, c, nil)
		ref := &flinkFailureRate{max: maxF, intervalMS: intervalMS}
		now := int64(r.IntN(1_000_000))
		for i := range 200 {
			// Gaps around the interval, so both outcomes are common.
			switch r.IntN(4) {
			case 0:
				now += int64(r.IntN(3))
			case 1:
				now += intervalMS / int64(maxF)
			default:
				now += int64(r.IntN(int(2*intervalMS/int64(maxF)) + 1))
			}
			ref.notifyFailure(now)
			want := ref.canRestart(now)
			got := s.OnFailure(now)
			if got.Restart != want {
				t.Fatalf("trial %d (max %d, interval %d ms), failure %d at %d: restart %v, Flink %v (%s)",
					trial, maxF, intervalMS, i, now, got.Restart, want, got.Reason)
			}
			if !want {
				break
			}
		}
	}
}

// TestPropertyExponentialJitterBounds checks every delay against
// clamp(base ± floor(base × jitter)) with base = initial × multiplier^k, for
// random settings, random failure times and a seeded rand.
func TestPropertyExponentialJitterBounds(t *testing.T) {
	r := testseed.Rand(t, 2)
	for trial := range trials(t) {
		c := Config{
			Type:                  ExponentialDelay,
			InitialBackoff:        time.Duration(1+r.IntN(5_000)) * time.Millisecond,
			BackoffMultiplier:     1 + 0.01 + 3*r.Float64(),
			ResetBackoffThreshold: time.Duration(1+r.IntN(600)) * time.Second,
			JitterFactor:          r.Float64(),
		}
		c.MaxBackoff = c.InitialBackoff * time.Duration(1+r.IntN(200))
		s := mustNew(t, c, r.Float64)

		k := 0                 // restarts since the last reset
		var next time.Duration // when the pending restart happens
		scheduled := false
		now := int64(0)
		for i := range 100 {
			gap := int64(1 + r.IntN(int(c.MaxBackoff.Milliseconds())+1))
			if r.IntN(10) == 0 {
				gap = c.ResetBackoffThreshold.Milliseconds() + int64(r.IntN(2_000)) - 1_000
			}
			now += gap
			at := time.Duration(now) * time.Millisecond
			d := s.OnFailure(now)
			if !d.Restart {
				t.Fatalf("trial %d, failure %d: gave up (%s)", trial, i, d.Reason)
			}
			if scheduled && at <= next { // merged into the pending restart
				if d.Delay != next-at {
					t.Fatalf("trial %d, failure %d: merged delay %v, want %v", trial, i, d.Delay, next-at)
				}
				continue
			}
			if !scheduled || at-next >= c.ResetBackoffThreshold {
				k = 0
			}
			base := math.Trunc(float64(c.InitialBackoff) * math.Pow(c.BackoffMultiplier, float64(k)))
			off := math.Floor(base * c.JitterFactor)
			lo := time.Duration(min(max(base-off, float64(c.InitialBackoff)), float64(c.MaxBackoff)))
			hi := time.Duration(min(max(base+off, float64(c.InitialBackoff)), float64(c.MaxBackoff)))
			if d.Delay < lo || d.Delay > hi {
				t.Fatalf("trial %d, failure %d (k=%d, %+v): delay %v outside [%v, %v]", trial, i, k, c, d.Delay, lo, hi)
			}
			next, scheduled = at+d.Delay, true
			k++
		}
	}
}

// TestPropertyGivingUpIsFinal: once a strategy gives up, every later failure
// gets the same decision, whatever its time.
func TestPropertyGivingUpIsFinal(t *testing.T) {
	r := testseed.Rand(t, 3)
	configs := []Config{
		{Type: None},
		{Type: FixedDelay, FixedDelayAttempts: 3},
		{Type: FailureRate, MaxFailuresPerInterval: 2},
		{Type: ExponentialDelay, AttemptsBeforeResetBackoff: 3},
	}
	for trial := range trials(t) {
		c := configs[r.IntN(len(configs))]
		s := mustNew(t, c, r.Float64)
		now := int64(0)
		var final *Decision
		for range 50 {
			now += int64(r.IntN(2_000))
			if r.IntN(20) == 0 {
				now += int64(2 * time.Hour / time.Millisecond)
			}
			d := s.OnFailure(now)
			switch {
			case final != nil && d != *final:
				t.Fatalf("trial %d (%s): after giving up with %+v, got %+v", trial, c.Type, *final, d)
			case final == nil && !d.Restart:
				final = &d
			}
		}
	}
}

func TestPropertyDurationFormatRoundTrips(t *testing.T) {
	r := testseed.Rand(t, 4)
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour}
	for range trials(t) * 10 {
		u := units[r.IntN(len(units))]
		d := time.Duration(r.Int64N(int64(math.MaxInt64/u))) * u
		if r.IntN(4) == 0 {
			d = time.Duration(r.Int64N(10_000)) * u
		}
		got, err := parseDuration(formatDuration(d))
		if err != nil || got != d {
			t.Fatalf("parseDuration(formatDuration(%d)) = %v, %v (formatted %q)", int64(d), got, err, formatDuration(d))
		}
	}
}
