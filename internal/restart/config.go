package restart

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Strategy names: the values of restart-strategy.type after Parse or
// WithDefaults, which also accept Flink's aliases in any case: off and
// disable (Flink 2's main name) for none, and fixeddelay, failurerate and
// exponentialdelay.
const (
	None             = "none"
	FixedDelay       = "fixed-delay"
	FailureRate      = "failure-rate"
	ExponentialDelay = "exponential-delay"
)

// Flink's configuration keys, as Parse reads them and as errors name them.
const (
	KeyType = "restart-strategy.type"
	// KeyTypeDeprecated is the pre-1.19 spelling of KeyType; KeyType wins when
	// both are set.
	KeyTypeDeprecated = "restart-strategy"

	KeyFixedDelayAttempts = "restart-strategy.fixed-delay.attempts"
	KeyFixedDelayDelay    = "restart-strategy.fixed-delay.delay"

	KeyFailureRateMaxFailuresPerInterval = "restart-strategy.failure-rate.max-failures-per-interval"
	KeyFailureRateInterval               = "restart-strategy.failure-rate.failure-rate-interval"
	KeyFailureRateDelay                  = "restart-strategy.failure-rate.delay"

	KeyInitialBackoff             = "restart-strategy.exponential-delay.initial-backoff"
	KeyMaxBackoff                 = "restart-strategy.exponential-delay.max-backoff"
	KeyBackoffMultiplier          = "restart-strategy.exponential-delay.backoff-multiplier"
	KeyResetBackoffThreshold      = "restart-strategy.exponential-delay.reset-backoff-threshold"
	KeyJitterFactor               = "restart-strategy.exponential-delay.jitter-factor"
	KeyAttemptsBeforeResetBackoff = "restart-strategy.exponential-delay.attempts-before-reset-backoff"
)

// Flink 2.x defaults (RestartStrategyOptions).
const (
	DefaultFixedDelayAttempts         = 1
	DefaultFixedDelay                 = time.Second
	DefaultMaxFailuresPerInterval     = 1
	DefaultFailureRateInterval        = time.Minute
	DefaultFailureRateDelay           = time.Second
	DefaultInitialBackoff             = time.Second
	DefaultMaxBackoff                 = time.Minute
	DefaultBackoffMultiplier          = 1.5
	DefaultResetBackoffThreshold      = time.Hour
	DefaultJitterFactor               = 0.1
	DefaultAttemptsBeforeResetBackoff = math.MaxInt32 // Flink's Integer.MAX_VALUE, shown as "infinite"
)

// Zero is an explicit zero for the four settings whose legal range includes
// zero: FixedDelayAttempts, FixedDelay, FailureRateDelay and JitterFactor. In
// a Config the Go zero value means "not set, use Flink's default", so
// JitterFactor: 0 gets the default 0.1 while JitterFactor: Zero turns jitter
// off. Parse stores a configured "0" for those keys as Zero. Zero survives
// WithDefaults; the strategies read it as 0.
const Zero = -1

// Config selects a restart strategy and holds every Flink setting of every
// strategy; only the fields of the selected Type are used and validated.
//
// A zero field means "not set": WithDefaults replaces it with Flink's default
// (the Default* constants). See Zero for the four settings that can be 0.
type Config struct {
	// Type is restart-strategy.type: None, FixedDelay, FailureRate or
	// ExponentialDelay. "" means not set; WithDefaults resolves it.
	Type string

	// FixedDelayAttempts is restart-strategy.fixed-delay.attempts: restarts
	// allowed before the job fails (>= 0, or Zero). Default 1.
	FixedDelayAttempts int
	// FixedDelay is restart-strategy.fixed-delay.delay: the wait before each
	// restart (>= 0, or Zero). Default 1 s.
	FixedDelay time.Duration

	// MaxFailuresPerInterval is
	// restart-strategy.failure-rate.max-failures-per-interval: restarts allowed
	// within FailureRateInterval (> 0). Default 1.
	MaxFailuresPerInterval int
	// FailureRateInterval is restart-strategy.failure-rate.failure-rate-interval:
	// the sliding window failures are counted in (> 0). Default 1 min.
	FailureRateInterval time.Duration
	// FailureRateDelay is restart-strategy.failure-rate.delay: the wait before
	// each restart (>= 0, or Zero). Default 1 s.
	FailureRateDelay time.Duration

	// InitialBackoff is restart-strategy.exponential-delay.initial-backoff: the
	// first delay, and the lower bound of every delay (> 0). Default 1 s.
	InitialBackoff time.Duration
	// MaxBackoff is restart-strategy.exponential-delay.max-backoff: the upper
	// bound of every delay (>= InitialBackoff). Default 1 min.
	MaxBackoff time.Duration
	// BackoffMultiplier is restart-strategy.exponential-delay.backoff-multiplier:
	// the growth of the delay per consecutive failure (> 1). Default 1.5.
	BackoffMultiplier float64
	// ResetBackoffThreshold is
	// restart-strategy.exponential-delay.reset-backoff-threshold: how long the
	// job must run, from its last restart, for the next failure to start over
	// at InitialBackoff (> 0). Default 1 h.
	ResetBackoffThreshold time.Duration
	// JitterFactor is restart-strategy.exponential-delay.jitter-factor: the
	// delay moves by up to this fraction of itself, either way ([0, 1], or
	// Zero). Default 0.1.
	JitterFactor float64
	// AttemptsBeforeResetBackoff is
	// restart-strategy.exponential-delay.attempts-before-reset-backoff:
	// restarts allowed before the job fails; the count starts over when the
	// backoff resets (>= 1). Default math.MaxInt32 ("infinite" in Flink's
	// docs).
	AttemptsBeforeResetBackoff int
}

// canonicalType maps a restart-strategy.type value, with Flink's aliases and
// in any case, to one of the four strategy names; ok is false if it is none
// of them.
func canonicalType(s string) (name string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "off", "disable":
		return None, true
	case "fixed-delay", "fixeddelay":
		return FixedDelay, true
	case "failure-rate", "failurerate":
		return FailureRate, true
	case "exponential-delay", "exponentialdelay":
		return ExponentialDelay, true
	}
	return "", false
}

const acceptedTypes = "none (or off, disable), fixed-delay (fixeddelay), failure-rate (failurerate), exponential-delay (exponentialdelay)"

// WithDefaults returns c with its Type resolved and every unset field set to
// Flink's default.
//
// An unset Type follows Flink: with checkpointing it is ExponentialDelay with
// Flink's default exponential-delay settings (any exponential-delay fields
// already set are replaced, as Flink ignores those keys in this case);
// without checkpointing it is None. A Type given as one of Flink's aliases
// ("off", "fixeddelay", ...) becomes its main name. WithDefaults is
// idempotent.
func (c Config) WithDefaults(checkpointing bool) Config {
	if c.Type == "" {
		if checkpointing {
			c.Type = ExponentialDelay
			c.InitialBackoff = DefaultInitialBackoff
			c.MaxBackoff = DefaultMaxBackoff
			c.BackoffMultiplier = DefaultBackoffMultiplier
			c.ResetBackoffThreshold = DefaultResetBackoffThreshold
			c.JitterFactor = DefaultJitterFactor
			c.AttemptsBeforeResetBackoff = DefaultAttemptsBeforeResetBackoff
		} else {
			c.Type = None
		}
	} else if name, ok := canonicalType(c.Type); ok {
		c.Type = name
	}
	setDefault(&c.FixedDelayAttempts, DefaultFixedDelayAttempts)
	setDefault(&c.FixedDelay, DefaultFixedDelay)
	setDefault(&c.MaxFailuresPerInterval, DefaultMaxFailuresPerInterval)
	setDefault(&c.FailureRateInterval, DefaultFailureRateInterval)
	setDefault(&c.FailureRateDelay, DefaultFailureRateDelay)
	setDefault(&c.InitialBackoff, DefaultInitialBackoff)
	setDefault(&c.MaxBackoff, DefaultMaxBackoff)
	setDefault(&c.BackoffMultiplier, DefaultBackoffMultiplier)
	setDefault(&c.ResetBackoffThreshold, DefaultResetBackoffThreshold)
	setDefault(&c.JitterFactor, DefaultJitterFactor)
	setDefault(&c.AttemptsBeforeResetBackoff, DefaultAttemptsBeforeResetBackoff)
	return c
}

func setDefault[T int | float64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

// Validate reports every setting of the selected Type that is out of Flink's
// range, one error per setting, each naming its Flink key. Call it after
// WithDefaults: unset fields are errors.
func (c Config) Validate() error {
	switch c.Type {
	case None:
		return nil
	case FixedDelay:
		return errors.Join(
			checkZeroOK(KeyFixedDelayAttempts, c.FixedDelayAttempts),
			checkZeroOK(KeyFixedDelayDelay, c.FixedDelay),
		)
	case FailureRate:
		return errors.Join(
			checkPositive(KeyFailureRateMaxFailuresPerInterval, c.MaxFailuresPerInterval),
			checkPositive(KeyFailureRateInterval, c.FailureRateInterval),
			checkZeroOK(KeyFailureRateDelay, c.FailureRateDelay),
		)
	case ExponentialDelay:
		errs := []error{
			checkPositive(KeyInitialBackoff, c.InitialBackoff),
			checkPositive(KeyMaxBackoff, c.MaxBackoff),
			checkMultiplier(c.BackoffMultiplier),
			checkPositive(KeyResetBackoffThreshold, c.ResetBackoffThreshold),
			checkJitter(c.JitterFactor),
			checkPositive(KeyAttemptsBeforeResetBackoff, c.AttemptsBeforeResetBackoff),
		}
		if c.InitialBackoff > 0 && c.MaxBackoff > 0 && c.InitialBackoff > c.MaxBackoff {
			errs = append(errs, fmt.Errorf("%s: must be at least %s (%s), got %s",
				KeyMaxBackoff, KeyInitialBackoff, formatDuration(c.InitialBackoff), formatDuration(c.MaxBackoff)))
		}
		return errors.Join(errs...)
	case "":
		return fmt.Errorf("%s: not set (call WithDefaults)", KeyType)
	}
	if name, ok := canonicalType(c.Type); ok {
		return fmt.Errorf("%s: %q is an alias of %q (call WithDefaults)", KeyType, c.Type, name)
	}
	return fmt.Errorf("%s: unknown strategy %q; accepted: %s", KeyType, c.Type, acceptedTypes)
}

// show formats a setting's value for an error message, durations in Flink's
// notation.
func show[T int | float64 | time.Duration](v T) string {
	if d, ok := any(v).(time.Duration); ok {
		if d < 0 {
			return d.String()
		}
		return formatDuration(d)
	}
	return fmt.Sprint(v)
}

// checkZeroOK accepts v > 0 or Zero (an explicit 0); v == 0 means the field
// was never set.
func checkZeroOK[T int | time.Duration](key string, v T) error {
	switch {
	case v == Zero || v > 0:
		return nil
	case v == 0:
		return fmt.Errorf("%s: not set (call WithDefaults, or use Zero for 0)", key)
	}
	return fmt.Errorf("%s: must be >= 0, got %s", key, show(v))
}

func checkPositive[T int | time.Duration](key string, v T) error {
	switch {
	case v > 0:
		return nil
	case v == 0:
		return fmt.Errorf("%s: not set (call WithDefaults)", key)
	}
	return fmt.Errorf("%s: must be > 0, got %s", key, show(v))
}

func checkMultiplier(m float64) error {
	switch {
	case m > 1 && !math.IsInf(m, 1):
		return nil
	case m == 0:
		return fmt.Errorf("%s: not set (call WithDefaults)", KeyBackoffMultiplier)
	}
	return fmt.Errorf("%s: must be > 1 and finite, got %v", KeyBackoffMultiplier, m)
}

func checkJitter(j float64) error {
	switch {
	case j == Zero || (j > 0 && j <= 1):
		return nil
	case j == 0:
		return fmt.Errorf("%s: not set (call WithDefaults, or use Zero for 0)", KeyJitterFactor)
	}
	return fmt.Errorf("%s: must be in [0, 1], got %v", KeyJitterFactor, j)
}

// eff is the value a strategy uses for a setting that may hold Zero.
func eff[T int | float64 | time.Duration](v T) T {
	if v == Zero {
		return 0
	}
	return v
}
