package restart

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		kv   map[string]string
		want Config
	}{
		{"empty", nil, Config{}},
		{"other keys are ignored", map[string]string{"parallelism.default": "4", "restart-strategyx": "?"}, Config{}},
		{
			name: "fixed-delay",
			kv: map[string]string{
				"restart-strategy.type":                 "fixed-delay",
				"restart-strategy.fixed-delay.attempts": " 3 ",
				"restart-strategy.fixed-delay.delay":    "10 s",
			},
			want: Config{Type: FixedDelay, FixedDelayAttempts: 3, FixedDelay: 10 * time.Second},
		},
		{
			name: "failure-rate",
			kv: map[string]string{
				"restart-strategy.type":                                   "failure-rate",
				"restart-strategy.failure-rate.max-failures-per-interval": "3",
				"restart-strategy.failure-rate.failure-rate-interval":     "5 min",
				"restart-strategy.failure-rate.delay":                     "10s",
			},
			want: Config{Type: FailureRate, MaxFailuresPerInterval: 3, FailureRateInterval: 5 * time.Minute, FailureRateDelay: 10 * time.Second},
		},
		{
			name: "exponential-delay, as in Flink's docs",
			kv: map[string]string{
				"restart-strategy.type":                                            "exponential-delay",
				"restart-strategy.exponential-delay.initial-backoff":               "10 s",
				"restart-strategy.exponential-delay.max-backoff":                   "2 min",
				"restart-strategy.exponential-delay.backoff-multiplier":            "1.4",
				"restart-strategy.exponential-delay.reset-backoff-threshold":       "10 min",
				"restart-strategy.exponential-delay.jitter-factor":                 "0.1",
				"restart-strategy.exponential-delay.attempts-before-reset-backoff": "10",
			},
			want: Config{Type: ExponentialDelay, InitialBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute, BackoffMultiplier: 1.4,
				ResetBackoffThreshold: 10 * time.Minute, JitterFactor: 0.1, AttemptsBeforeResetBackoff: 10},
		},
		{
			name: "zeros become Zero",
			kv: map[string]string{
				"restart-strategy.fixed-delay.attempts":            "0",
				"restart-strategy.fixed-delay.delay":               "0 s",
				"restart-strategy.failure-rate.delay":              "0",
				"restart-strategy.exponential-delay.jitter-factor": "0.0",
			},
			want: Config{FixedDelayAttempts: Zero, FixedDelay: Zero, FailureRateDelay: Zero, JitterFactor: Zero},
		},
		{"alias in any case", map[string]string{"restart-strategy.type": "ExponentialDelay"}, Config{Type: ExponentialDelay}},
		{"off", map[string]string{"restart-strategy.type": "off"}, Config{Type: None}},
		{"disable", map[string]string{"restart-strategy.type": "disable"}, Config{Type: None}},
		{"deprecated key", map[string]string{"restart-strategy": "failurerate"}, Config{Type: FailureRate}},
		{"restart-strategy.type wins", map[string]string{"restart-strategy": "fixed-delay", "restart-strategy.type": "none"}, Config{Type: None}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.kv)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Parse\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"10 s", 10 * time.Second},
		{"10s", 10 * time.Second},
		{"1min", time.Minute},
		{"1 m", time.Minute},
		{"3 minutes", 3 * time.Minute},
		{"500 ms", 500 * time.Millisecond},
		{"500", 500 * time.Millisecond}, // no unit: milliseconds
		{"2 Hours", 2 * time.Hour},
		{"1 d", 24 * time.Hour},
		{"7 µs", 7 * time.Microsecond},
		{"7 nanos", 7},
		{" 0 s ", 0},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		kv   map[string]string
		want string
	}{
		{"unknown type", map[string]string{"restart-strategy.type": "sometimes"},
			`restart-strategy.type: unknown strategy "sometimes"; accepted: none (or off, disable), fixed-delay (fixeddelay), failure-rate (failurerate), exponential-delay (exponentialdelay)`},
		{"empty type", map[string]string{"restart-strategy": ""},
			`restart-strategy: unknown strategy ""; accepted: none (or off, disable), fixed-delay (fixeddelay), failure-rate (failurerate), exponential-delay (exponentialdelay)`},
		{"unknown key", map[string]string{"restart-strategy.fixed-delay.attempt": "3"},
			"restart-strategy.fixed-delay.attempt: unknown key"},
		{"not an integer", map[string]string{"restart-strategy.fixed-delay.attempts": "three"},
			`restart-strategy.fixed-delay.attempts: "three" is not a 32-bit integer`},
		{"beyond Java's int", map[string]string{"restart-strategy.exponential-delay.attempts-before-reset-backoff": "2147483648"},
			`restart-strategy.exponential-delay.attempts-before-reset-backoff: "2147483648" is not a 32-bit integer`},
		{"negative attempts", map[string]string{"restart-strategy.fixed-delay.attempts": "-1"},
			"restart-strategy.fixed-delay.attempts: must be >= 0, got -1"},
		{"zero failures per interval", map[string]string{"restart-strategy.failure-rate.max-failures-per-interval": "0"},
			"restart-strategy.failure-rate.max-failures-per-interval: must be >= 1, got 0"},
		{"zero interval", map[string]string{"restart-strategy.failure-rate.failure-rate-interval": "0 min"},
			"restart-strategy.failure-rate.failure-rate-interval: must be > 0, got 0"},
		{"unknown unit", map[string]string{"restart-strategy.fixed-delay.delay": "2 fortnights"},
			`restart-strategy.fixed-delay.delay: "2 fortnights" is not a duration: unknown unit "fortnights" (want d, h, min, m, s, ms, µs or ns, or a long form such as "minutes")`},
		{"no number", map[string]string{"restart-strategy.fixed-delay.delay": "s"},
			`restart-strategy.fixed-delay.delay: "s" is not a duration: it must start with a whole number, e.g. "10 s"`},
		{"negative duration", map[string]string{"restart-strategy.exponential-delay.initial-backoff": "-1 s"},
			`restart-strategy.exponential-delay.initial-backoff: "-1 s" is not a duration: it must start with a whole number, e.g. "10 s"`},
		{"fractional duration", map[string]string{"restart-strategy.exponential-delay.max-backoff": "1.5 s"},
			`restart-strategy.exponential-delay.max-backoff: "1.5 s" is not a duration: unknown unit ".5 s" (want d, h, min, m, s, ms, µs or ns, or a long form such as "minutes")`},
		{"duration overflow", map[string]string{"restart-strategy.exponential-delay.reset-backoff-threshold": "200000 d"},
			`restart-strategy.exponential-delay.reset-backoff-threshold: "200000 d" is too long a duration (at most 2562047h47m16.854775807s)`},
		{"multiplier 1", map[string]string{"restart-strategy.exponential-delay.backoff-multiplier": "1"},
			"restart-strategy.exponential-delay.backoff-multiplier: must be > 1, got 1"},
		{"multiplier NaN", map[string]string{"restart-strategy.exponential-delay.backoff-multiplier": "NaN"},
			`restart-strategy.exponential-delay.backoff-multiplier: "NaN" is not a finite number`},
		{"jitter above 1", map[string]string{"restart-strategy.exponential-delay.jitter-factor": "1.5"},
			"restart-strategy.exponential-delay.jitter-factor: must be in [0, 1], got 1.5"},
		{"every bad key, in key order", map[string]string{
			"restart-strategy.type":                 "often",
			"restart-strategy.fixed-delay.attempts": "x",
			"restart-strategy.fixed-delay.delay":    "1 y",
		}, `restart-strategy.fixed-delay.attempts: "x" is not a 32-bit integer` + "\n" +
			`restart-strategy.fixed-delay.delay: "1 y" is not a duration: unknown unit "y" (want d, h, min, m, s, ms, µs or ns, or a long form such as "minutes")` + "\n" +
			`restart-strategy.type: unknown strategy "often"; accepted: none (or off, disable), fixed-delay (fixeddelay), failure-rate (failurerate), exponential-delay (exponentialdelay)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.kv)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse(%v) = %v\nwant %s", tt.kv, err, tt.want)
			}
		})
	}
}

// TestParsedDefaultsRun checks the whole pipeline on Flink's default
// configuration for a checkpointed job: no keys at all.
func TestParsedDefaultsRun(t *testing.T) {
	c, err := Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults(true)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := New(c, func() float64 { return 0.5 }).OnFailure(1_700_000_000_000)
	if !d.Restart || d.Delay != time.Second {
		t.Fatalf("first failure: %+v, want a restart after 1 s", d)
	}
}
