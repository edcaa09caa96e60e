package restart

import (
	"math"
	"strings"
	"testing"
	"time"
)

// step is one failure and the decision expected for it. A give-up's reason is
// compared exactly; a restart's reason must start with the strategy's name.
type step struct {
	at      int64 // epoch ms
	restart bool
	delay   time.Duration
	reason  string // for give-ups
}

func restartAfter(at int64, d time.Duration) step { return step{at: at, restart: true, delay: d} }
func giveUp(at int64, reason string) step         { return step{at: at, reason: reason} }

func runSteps(t *testing.T, s Strategy, name string, steps []step) {
	t.Helper()
	for i, st := range steps {
		got := s.OnFailure(st.at)
		if got.Restart != st.restart || got.Delay != st.delay {
			t.Fatalf("step %d: OnFailure(%d) = %+v, want restart=%v delay=%v", i, st.at, got, st.restart, st.delay)
		}
		if st.restart && !strings.HasPrefix(got.Reason, name+":") {
			t.Errorf("step %d: reason %q does not start with %q", i, got.Reason, name+":")
		}
		if !st.restart && got.Reason != st.reason {
			t.Errorf("step %d: reason %q, want %q", i, got.Reason, st.reason)
		}
	}
}

func mustNew(t *testing.T, c Config, rand func() float64) Strategy {
	t.Helper()
	c = c.WithDefaults(false)
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", c, err)
	}
	return New(c, rand)
}

func TestNone(t *testing.T) {
	const reason = "restart-strategy.type (none) allows no restarts"
	for _, c := range []Config{{}, {Type: None}, {Type: "off"}, {Type: "disable"}} {
		runSteps(t, mustNew(t, c, nil), None, []step{giveUp(0, reason), giveUp(1000, reason)})
	}
}

func TestFixedDelay(t *testing.T) {
	const exhausted3 = "restart-strategy.fixed-delay.attempts (3) exhausted"
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "Flink defaults: one restart after 1 s",
			cfg:  Config{Type: FixedDelay},
			steps: []step{
				restartAfter(0, time.Second),
				giveUp(5000, "restart-strategy.fixed-delay.attempts (1) exhausted"),
			},
		},
		{
			name: "three attempts, however far apart",
			cfg:  Config{Type: FixedDelay, FixedDelayAttempts: 3, FixedDelay: 10 * time.Second},
			steps: []step{
				restartAfter(0, 10*time.Second),
				restartAfter(100_000, 10*time.Second),
				restartAfter(100_000_000, 10*time.Second),
				giveUp(200_000_000, exhausted3),
				giveUp(300_000_000, exhausted3), // stays given up
			},
		},
		{
			name:  "zero attempts fails at once",
			cfg:   Config{Type: FixedDelay, FixedDelayAttempts: Zero},
			steps: []step{giveUp(0, "restart-strategy.fixed-delay.attempts (0) exhausted")},
		},
		{
			name: "zero delay",
			cfg:  Config{Type: FixedDelay, FixedDelayAttempts: 2, FixedDelay: Zero},
			steps: []step{
				restartAfter(0, 0),
				restartAfter(0, 0),
				giveUp(0, "restart-strategy.fixed-delay.attempts (2) exhausted"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, mustNew(t, tt.cfg, nil), FixedDelay, tt.steps)
		})
	}
}

func TestFailureRate(t *testing.T) {
	const exceeded2 = "restart-strategy.failure-rate.max-failures-per-interval (2) exceeded: " +
		"3 failures within restart-strategy.failure-rate.failure-rate-interval (10 s)"
	two := Config{Type: FailureRate, MaxFailuresPerInterval: 2, FailureRateInterval: 10 * time.Second, FailureRateDelay: 3 * time.Second}
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "Flink defaults: two failures within 1 min fail the job",
			cfg:  Config{Type: FailureRate},
			steps: []step{
				restartAfter(0, time.Second),
				giveUp(30_000, "restart-strategy.failure-rate.max-failures-per-interval (1) exceeded: "+
					"2 failures within restart-strategy.failure-rate.failure-rate-interval (1 min)"),
			},
		},
		{
			name: "the interval includes both ends",
			cfg:  two,
			steps: []step{
				restartAfter(0, 3*time.Second),
				restartAfter(5_000, 3*time.Second),
				giveUp(10_000, exceeded2), // 10_000 - 0 is not > 10 s
			},
		},
		{
			name: "the window slides: old failures stop counting",
			cfg:  two,
			steps: []step{
				restartAfter(0, 3*time.Second),
				restartAfter(5_000, 3*time.Second),
				restartAfter(10_001, 3*time.Second), // 0 has left the window
				giveUp(15_000, exceeded2),           // 5_000, 10_001, 15_000
			},
		},
		{
			name: "a steady rate under the limit restarts forever",
			cfg:  two,
			steps: func() []step {
				var s []step
				for i := range int64(50) {
					s = append(s, restartAfter(i*6_000, 3*time.Second)) // at most 2 per 10 s
				}
				return s
			}(),
		},
		{
			name: "gives up for good, even after a quiet hour",
			cfg:  two,
			steps: []step{
				restartAfter(0, 3*time.Second),
				restartAfter(1, 3*time.Second),
				giveUp(2, exceeded2),
				giveUp(3_600_000, exceeded2),
			},
		},
		{
			name: "a clock that goes back counts as the latest time",
			cfg:  Config{Type: FailureRate, FailureRateDelay: Zero},
			steps: []step{
				restartAfter(120_000, 0),
				giveUp(0, "restart-strategy.failure-rate.max-failures-per-interval (1) exceeded: "+
					"2 failures within restart-strategy.failure-rate.failure-rate-interval (1 min)"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, mustNew(t, tt.cfg, nil), FailureRate, tt.steps)
		})
	}
}

// noJitter is exponential-delay without jitter: initial 1 s, max 10 s,
// multiplier 2, reset after 60 s.
var noJitter = Config{
	Type:                  ExponentialDelay,
	InitialBackoff:        time.Second,
	MaxBackoff:            10 * time.Second,
	BackoffMultiplier:     2,
	ResetBackoffThreshold: time.Minute,
	JitterFactor:          Zero,
}

func TestExponentialDelay(t *testing.T) {
	withAttempts := func(c Config, n int) Config { c.AttemptsBeforeResetBackoff = n; return c }
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			// Each failure comes 1 ms after the restart it follows.
			name: "grows by the multiplier up to the cap",
			cfg:  noJitter,
			steps: []step{
				restartAfter(0, 1*time.Second),              // restart at 1_000
				restartAfter(1_001, 2*time.Second),          // restart at 3_001
				restartAfter(3_002, 4*time.Second),          // restart at 7_002
				restartAfter(7_003, 8*time.Second),          // restart at 15_003
				restartAfter(15_004, 10*time.Second),        // 16 s capped; restart at 25_004
				restartAfter(25_005, 10*time.Second),        // restart at 35_005
				restartAfter(35_006+59_998, 10*time.Second), // ran 59.999 s < 60 s: no reset; restart at 105_004
				restartAfter(105_004+60_000, 1*time.Second), // ran 60 s: reset
				restartAfter(166_005, 2*time.Second),
			},
		},
		{
			name: "Flink defaults: 1 s × 1.5^k up to 1 min",
			cfg:  Config{Type: ExponentialDelay, JitterFactor: Zero},
			steps: func() []step {
				var s []step
				want := []time.Duration{
					1000 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond,
					3375 * time.Millisecond, 5062500 * time.Microsecond, 7593750 * time.Microsecond,
					11390625 * time.Microsecond, 17085937500, 25628906250, 38443359375, 57665039062,
					time.Minute, time.Minute,
				}
				next := int64(-1)
				for _, d := range want {
					at := next + 1
					s = append(s, restartAfter(at, d))
					next = at + int64(d/time.Millisecond)
				}
				return s
			}(),
		},
		{
			name: "a failure while a restart is pending is merged into it",
			cfg:  noJitter,
			steps: []step{
				restartAfter(0, time.Second),            // restart at 1_000
				restartAfter(400, 600*time.Millisecond), // merged: same restart
				restartAfter(1_000, 0),                  // merged: the restart is now
				restartAfter(1_001, 2*time.Second),      // counted: k = 1
			},
		},
		{
			name: "attempts-before-reset-backoff limits restarts between resets",
			cfg:  withAttempts(noJitter, 2),
			steps: []step{
				restartAfter(0, time.Second),
				restartAfter(1_001, 2*time.Second),      // restart at 3_001
				restartAfter(3_001+60_000, time.Second), // reset: the count starts over; restart at 64_001
				restartAfter(64_002, 2*time.Second),
				giveUp(66_003, "restart-strategy.exponential-delay.attempts-before-reset-backoff (2) exhausted"),
				giveUp(10_000_000, "restart-strategy.exponential-delay.attempts-before-reset-backoff (2) exhausted"),
			},
		},
		{
			name: "one attempt",
			cfg:  withAttempts(noJitter, 1),
			steps: []step{
				restartAfter(0, time.Second),
				giveUp(1_001, "restart-strategy.exponential-delay.attempts-before-reset-backoff (1) exhausted"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, mustNew(t, tt.cfg, nil), ExponentialDelay, tt.steps)
		})
	}
}

// TestExponentialDelayLongRun fails a job thousands of times in a row: the
// delay stays at the cap, with no overflow once multiplier^k leaves float64.
func TestExponentialDelayLongRun(t *testing.T) {
	c := Config{Type: ExponentialDelay} // with jitter 0.1
	s := mustNew(t, c, func() float64 { return 0.999999 })
	at := int64(0)
	for i := range 5000 {
		d := s.OnFailure(at)
		if !d.Restart || d.Delay <= 0 || d.Delay > time.Minute {
			t.Fatalf("failure %d at %d: %+v", i, at, d)
		}
		if i > 20 && d.Delay != time.Minute {
			t.Fatalf("failure %d: delay %v, want the 1 min cap", i, d.Delay)
		}
		at += d.Delay.Milliseconds() + 1
	}
}

func TestExponentialDelayJitter(t *testing.T) {
	c := noJitter
	c.JitterFactor = 0.1
	// Consecutive failures (k = 0, 1, ...): base 1, 2, 4, 8, 16 s.
	tests := []struct {
		name string
		r    float64
		want []time.Duration
	}{
		// Downward jitter never goes below initial-backoff.
		{"lowest", 0, []time.Duration{time.Second, 1800 * time.Millisecond, 3600 * time.Millisecond, 7200 * time.Millisecond, 10 * time.Second}},
		{"middle", 0.5, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}},
		// Upward jitter never goes above max-backoff.
		{"highest", math.Nextafter(1, 0), []time.Duration{1100 * time.Millisecond, 2200 * time.Millisecond, 4400 * time.Millisecond, 8800 * time.Millisecond, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			s := mustNew(t, c, func() float64 { calls++; return tt.r })
			at := int64(0)
			for i, want := range tt.want {
				d := s.OnFailure(at)
				if !d.Restart || d.Delay != want {
					t.Fatalf("failure %d: %+v, want delay %v", i, d, want)
				}
				at += d.Delay.Milliseconds() + 1
			}
			if calls != len(tt.want) {
				t.Errorf("rand called %d times, want once per restart (%d)", calls, len(tt.want))
			}
		})
	}
}

func TestNewPanics(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		rand func() float64
		want string
	}{
		{"unset config", Config{}, nil, "restart.New: invalid Config"},
		{"invalid config", Config{Type: FixedDelay, FixedDelayAttempts: -3}.WithDefaults(false), nil, "fixed-delay.attempts: must be >= 0, got -3"},
		{"jitter without rand", Config{Type: ExponentialDelay}.WithDefaults(false), nil, "needs a rand function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %q, want one containing %q", msg, tt.want)
				}
			}()
			New(tt.cfg, tt.rand)
		})
	}
	// No jitter: rand is never needed.
	New(noJitter.WithDefaults(false), nil).OnFailure(0)
}

func TestBadRandPanics(t *testing.T) {
	c := Config{Type: ExponentialDelay}.WithDefaults(false)
	for _, r := range []float64{1, -0.1, math.NaN()} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "want a value in [0, 1)") {
					t.Errorf("rand %v: panic %q", r, msg)
				}
			}()
			New(c, func() float64 { return r }).OnFailure(0)
		}()
	}
}
