package restart

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Config from Flink-style keys and values, such as
// {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "10 s"}.
//
// Keys outside restart-strategy are ignored, so a whole job configuration can
// be passed; an unknown key inside it is an error (most likely a typo). The
// pre-1.19 key restart-strategy is read when restart-strategy.type is absent.
// Values follow Flink: integers and decimals as Java parses them, durations
// as a whole number and a unit ("10 s", "1min", "500 ms"; no unit means
// milliseconds; units d, h, min or m, s, ms, µs, ns, and their long forms
// such as "minutes"), strategy names in any case and with Flink's aliases.
//
// Each value is also checked against its own range (a configured "0" for
// max-failures-per-interval is an error, not a request for the default);
// checks across settings are left to Validate. Absent keys stay unset: call
// WithDefaults, then Validate. Errors name the key, one per bad key, in key
// order.
func Parse(kv map[string]string) (Config, error) {
	var c Config
	keys := make([]string, 0, len(kv))
	for k := range kv {
		if k == KeyTypeDeprecated || strings.HasPrefix(k, KeyTypeDeprecated+".") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		if k == KeyTypeDeprecated {
			if _, ok := kv[KeyType]; ok {
				continue
			}
		}
		if err := c.set(k, strings.TrimSpace(kv[k])); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// set parses v into the field for key k.
func (c *Config) set(k, v string) error {
	var err error
	switch k {
	case KeyType, KeyTypeDeprecated:
		name, ok := canonicalType(v)
		if !ok {
			return fmt.Errorf("%s: unknown strategy %q; accepted: %s", k, v, acceptedTypes)
		}
		c.Type = name
	case KeyFixedDelayAttempts:
		c.FixedDelayAttempts, err = parseInt(v, 0)
	case KeyFixedDelayDelay:
		c.FixedDelay, err = parseDurationMin(v, 0)
	case KeyFailureRateMaxFailuresPerInterval:
		c.MaxFailuresPerInterval, err = parseInt(v, 1)
	case KeyFailureRateInterval:
		c.FailureRateInterval, err = parseDurationMin(v, 1)
	case KeyFailureRateDelay:
		c.FailureRateDelay, err = parseDurationMin(v, 0)
	case KeyInitialBackoff:
		c.InitialBackoff, err = parseDurationMin(v, 1)
	case KeyMaxBackoff:
		c.MaxBackoff, err = parseDurationMin(v, 1)
	case KeyBackoffMultiplier:
		c.BackoffMultiplier, err = parseFloat(v)
		if err == nil && !(c.BackoffMultiplier > 1) {
			err = fmt.Errorf("must be > 1, got %s", v)
		}
	case KeyResetBackoffThreshold:
		c.ResetBackoffThreshold, err = parseDurationMin(v, 1)
	case KeyJitterFactor:
		c.JitterFactor, err = parseFloat(v)
		switch {
		case err != nil:
		case c.JitterFactor == 0:
			c.JitterFactor = Zero
		case c.JitterFactor < 0 || c.JitterFactor > 1:
			err = fmt.Errorf("must be in [0, 1], got %s", v)
		}
	case KeyAttemptsBeforeResetBackoff:
		c.AttemptsBeforeResetBackoff, err = parseInt(v, 1)
	default:
		return fmt.Errorf("%s: unknown key", k)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

// parseInt parses a Java int (32 bits) of at least lo; a legal 0 is stored
// as Zero.
func parseInt(v string, lo int) (int, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit integer", v)
	}
	if int(n) < lo {
		return 0, fmt.Errorf("must be >= %d, got %d", lo, n)
	}
	if n == 0 {
		return Zero, nil
	}
	return int(n), nil
}

// parseFloat parses a finite decimal number.
func parseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a finite number", v)
	}
	return f, nil
}

// parseDurationMin parses a Flink duration; with lo == 1 it must be > 0,
// with lo == 0 a legal 0 is stored as Zero.
func parseDurationMin(v string, lo int) (time.Duration, error) {
	d, err := parseDuration(v)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		if lo > 0 {
			return 0, errors.New("must be > 0, got 0")
		}
		return Zero, nil
	}
	return d, nil
}

// durationUnits maps Flink's time unit labels (TimeUtils) to their length.
var durationUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// ParseDuration parses a duration in Flink's notation (parseDuration), for
// the other settings with Flink's names.
func ParseDuration(v string) (time.Duration, error) { return parseDuration(v) }

// parseDuration parses a duration in Flink's notation, as Flink's
// TimeUtils.parseDuration does: a whole, non-negative number, optional
// spaces, then an optional unit label in any case ("10 s", "1min", "500",
// "2 Hours"). Without a unit the number is milliseconds. Durations that do
// not fit a time.Duration are errors.
func parseDuration(v string) (time.Duration, error) {
	t := strings.TrimSpace(v)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a duration: it must start with a whole number, e.g. \"10 s\"", v)
	}
	label := strings.ToLower(strings.TrimSpace(t[i:]))
	unit := time.Millisecond
	if label != "" {
		var ok bool
		if unit, ok = durationUnits[label]; !ok {
			return 0, fmt.Errorf("%q is not a duration: unknown unit %q (want d, h, min, m, s, ms, µs or ns, or a long form such as \"minutes\")", v, label)
		}
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > int64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("%q is too long a duration (at most %s)", v, time.Duration(math.MaxInt64))
	}
	return time.Duration(n) * unit, nil
}

// formatDuration writes d in Flink's notation with the largest unit that
// divides it ("1 min", "1500 ms"), so that parseDuration reads it back.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0 ms"
	}
	for _, u := range []struct {
		label string
		len   time.Duration
	}{
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second},
		{"ms", time.Millisecond}, {"µs", time.Microsecond},
	} {
		if d%u.len == 0 {
			return fmt.Sprintf("%d %s", d/u.len, u.label)
		}
	}
	return fmt.Sprintf("%d ns", int64(d))
}
