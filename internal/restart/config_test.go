package restart

import (
	"math"
	"testing"
	"time"
)

// flinkDefaults is every setting at Flink 2.x's default.
func flinkDefaults(typ string) Config {
	return Config{
		Type:                       typ,
		FixedDelayAttempts:         1,
		FixedDelay:                 time.Second,
		MaxFailuresPerInterval:     1,
		FailureRateInterval:        time.Minute,
		FailureRateDelay:           time.Second,
		InitialBackoff:             time.Second,
		MaxBackoff:                 time.Minute,
		BackoffMultiplier:          1.5,
		ResetBackoffThreshold:      time.Hour,
		JitterFactor:               0.1,
		AttemptsBeforeResetBackoff: math.MaxInt32,
	}
}

func TestWithDefaults(t *testing.T) {
	withZeros := flinkDefaults(FixedDelay)
	withZeros.FixedDelayAttempts, withZeros.FixedDelay, withZeros.FailureRateDelay, withZeros.JitterFactor = Zero, Zero, Zero, Zero
	customExp := flinkDefaults(ExponentialDelay)
	customExp.MaxBackoff = 5 * time.Minute

	tests := []struct {
		name          string
		in            Config
		checkpointing bool
		want          Config
	}{
		{"no type, no checkpointing: none", Config{}, false, flinkDefaults(None)},
		{"no type, checkpointing: exponential-delay", Config{}, true, flinkDefaults(ExponentialDelay)},
		{
			// Flink uses the default exponential-delay settings here, ignoring
			// any exponential-delay keys that were set.
			name:          "no type, checkpointing: exponential-delay settings are Flink's",
			in:            Config{MaxBackoff: 5 * time.Minute, JitterFactor: Zero, FixedDelayAttempts: 7},
			checkpointing: true,
			want: func() Config {
				c := flinkDefaults(ExponentialDelay)
				c.FixedDelayAttempts = 7
				return c
			}(),
		},
		{"a set type keeps its settings", Config{Type: ExponentialDelay, MaxBackoff: 5 * time.Minute}, true, customExp},
		{"a set type ignores checkpointing", Config{Type: None}, true, flinkDefaults(None)},
		{"aliases become main names", Config{Type: "FixedDelay"}, false, flinkDefaults(FixedDelay)},
		{"aliases become main names (disable)", Config{Type: "disable"}, true, flinkDefaults(None)},
		{"Zero stays", Config{Type: FixedDelay, FixedDelayAttempts: Zero, FixedDelay: Zero, FailureRateDelay: Zero, JitterFactor: Zero}, false, withZeros},
		{"unknown types are left for Validate", Config{Type: "sometimes"}, false, flinkDefaults("sometimes")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults(tt.checkpointing)
			if got != tt.want {
				t.Fatalf("WithDefaults(%v)\n got %+v\nwant %+v", tt.checkpointing, got, tt.want)
			}
			if again := got.WithDefaults(!tt.checkpointing); again != got {
				t.Fatalf("not idempotent:\n got %+v\nthen %+v", got, again)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	exp := func(f func(*Config)) Config {
		c := flinkDefaults(ExponentialDelay)
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"none", flinkDefaults(None), ""},
		{"fixed-delay", flinkDefaults(FixedDelay), ""},
		{"failure-rate", flinkDefaults(FailureRate), ""},
		{"exponential-delay", flinkDefaults(ExponentialDelay), ""},
		{"explicit zeros", Config{Type: FixedDelay, FixedDelayAttempts: Zero, FixedDelay: Zero}, ""},
		{"initial equal to max", exp(func(c *Config) { c.MaxBackoff = c.InitialBackoff }), ""},
		{"jitter 1", exp(func(c *Config) { c.JitterFactor = 1 }), ""},
		{"none ignores other settings", Config{Type: None, BackoffMultiplier: -3}, ""},
		{"fixed-delay ignores other strategies' settings", Config{Type: FixedDelay, FixedDelayAttempts: 2, FixedDelay: 1, MaxBackoff: -1}, ""},

		{"no type", Config{}, "restart-strategy.type: not set (call WithDefaults)"},
		{"alias", Config{Type: "off"}, `restart-strategy.type: "off" is an alias of "none" (call WithDefaults)`},
		{"unknown type", Config{Type: "sometimes"}, `restart-strategy.type: unknown strategy "sometimes"; accepted: ` +
			"none (or off, disable), fixed-delay (fixeddelay), failure-rate (failurerate), exponential-delay (exponentialdelay)"},
		{"unset fields", Config{Type: FixedDelay},
			"restart-strategy.fixed-delay.attempts: not set (call WithDefaults, or use Zero for 0)\n" +
				"restart-strategy.fixed-delay.delay: not set (call WithDefaults, or use Zero for 0)"},
		{"negative attempts", Config{Type: FixedDelay, FixedDelayAttempts: -3, FixedDelay: time.Second},
			"restart-strategy.fixed-delay.attempts: must be >= 0, got -3"},
		{"negative delay", Config{Type: FixedDelay, FixedDelayAttempts: 1, FixedDelay: -5 * time.Second},
			"restart-strategy.fixed-delay.delay: must be >= 0, got -5s"},
		{"failure-rate all wrong", Config{Type: FailureRate, MaxFailuresPerInterval: -1, FailureRateInterval: -time.Minute, FailureRateDelay: -2},
			"restart-strategy.failure-rate.max-failures-per-interval: must be > 0, got -1\n" +
				"restart-strategy.failure-rate.failure-rate-interval: must be > 0, got -1m0s\n" +
				"restart-strategy.failure-rate.delay: must be >= 0, got -2ns"},
		{"initial above max", exp(func(c *Config) { c.InitialBackoff = 10 * time.Second; c.MaxBackoff = 5 * time.Second }),
			"restart-strategy.exponential-delay.max-backoff: must be at least restart-strategy.exponential-delay.initial-backoff (10 s), got 5 s"},
		{"multiplier 1", exp(func(c *Config) { c.BackoffMultiplier = 1 }),
			"restart-strategy.exponential-delay.backoff-multiplier: must be > 1 and finite, got 1"},
		{"multiplier +Inf", exp(func(c *Config) { c.BackoffMultiplier = math.Inf(1) }),
			"restart-strategy.exponential-delay.backoff-multiplier: must be > 1 and finite, got +Inf"},
		{"multiplier NaN", exp(func(c *Config) { c.BackoffMultiplier = math.NaN() }),
			"restart-strategy.exponential-delay.backoff-multiplier: must be > 1 and finite, got NaN"},
		{"jitter above 1", exp(func(c *Config) { c.JitterFactor = 1.5 }),
			"restart-strategy.exponential-delay.jitter-factor: must be in [0, 1], got 1.5"},
		{"jitter negative", exp(func(c *Config) { c.JitterFactor = -0.5 }),
			"restart-strategy.exponential-delay.jitter-factor: must be in [0, 1], got -0.5"},
		{"attempts 0", exp(func(c *Config) { c.AttemptsBeforeResetBackoff = 0 }),
			"restart-strategy.exponential-delay.attempts-before-reset-backoff: not set (call WithDefaults)"},
		{"reset negative", exp(func(c *Config) { c.ResetBackoffThreshold = -time.Hour }),
			"restart-strategy.exponential-delay.reset-backoff-threshold: must be > 0, got -1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate(%+v) = %v, want nil", tt.cfg, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("Validate(%+v) = %v\nwant %s", tt.cfg, err, tt.want)
			}
		})
	}
}
