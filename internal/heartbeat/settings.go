package heartbeat

import (
	"errors"
	"fmt"
	"time"
)

// Defaults, with Flink's setting names. The heartbeat times are Weir's
// (docs/distributed-runtime.md, decision 11): Flink's 10 s / 50 s budget
// covers JVM pauses, Go's pauses are sub-millisecond, so the timeout covers
// the network and a starved scheduler only. The registration times are
// Flink's.
const (
	DefaultInterval            = time.Second            // heartbeat.interval
	DefaultTimeout             = 5 * time.Second        // heartbeat.timeout
	DefaultInitialBackoff      = 100 * time.Millisecond // cluster.registration.initial-timeout
	DefaultMaxBackoff          = 30 * time.Second       // cluster.registration.max-timeout
	DefaultRegistrationTimeout = 5 * time.Minute        // taskmanager.registration.timeout
)

// Settings configure both sides. Times are kept in whole milliseconds (the
// unit of every event's now); a zero field takes its default in
// WithDefaults.
type Settings struct {
	// Interval between two heartbeats of a TaskManager, heartbeat.interval.
	Interval time.Duration
	// Timeout is the silence after which either side gives the other up,
	// heartbeat.timeout. It must exceed Interval.
	Timeout time.Duration
	// InitialBackoff is the pause after the first failed registration
	// attempt, cluster.registration.initial-timeout; each further failure
	// doubles it, up to MaxBackoff (cluster.registration.max-timeout).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// RegistrationTimeout, taskmanager.registration.timeout: a TaskManager
	// not registered this long after it began registering gives up (exit 1).
	RegistrationTimeout time.Duration
}

// WithDefaults returns s with the defaults in place of zero fields.
func (s Settings) WithDefaults() Settings {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Interval, DefaultInterval)
	def(&s.Timeout, DefaultTimeout)
	def(&s.InitialBackoff, DefaultInitialBackoff)
	def(&s.MaxBackoff, DefaultMaxBackoff)
	def(&s.RegistrationTimeout, DefaultRegistrationTimeout)
	return s
}

// Validate checks settings after WithDefaults. Each error names the setting
// as Flink's configuration does and the value given; all problems are
// reported, joined.
func (s Settings) Validate() error {
	var errs []error
	positive := func(name string, v time.Duration) bool {
		if v < time.Millisecond {
			errs = append(errs, fmt.Errorf("%s must be at least 1ms, got %v", name, v))
			return false
		}
		return true
	}
	okI := positive("heartbeat.interval", s.Interval)
	okT := positive("heartbeat.timeout", s.Timeout)
	if okI && okT && s.Timeout <= s.Interval {
		errs = append(errs, fmt.Errorf("heartbeat.timeout (%v) must be greater than heartbeat.interval (%v), "+
			"or one late heartbeat loses a TaskManager", s.Timeout, s.Interval))
	}
	okB := positive("cluster.registration.initial-timeout", s.InitialBackoff)
	okM := positive("cluster.registration.max-timeout", s.MaxBackoff)
	if okB && okM && s.MaxBackoff < s.InitialBackoff {
		errs = append(errs, fmt.Errorf("cluster.registration.max-timeout (%v) must not be less than "+
			"cluster.registration.initial-timeout (%v)", s.MaxBackoff, s.InitialBackoff))
	}
	positive("taskmanager.registration.timeout", s.RegistrationTimeout)
	return errors.Join(errs...)
}

// ms is a validated Settings in milliseconds.
type ms struct {
	interval, timeout, initialBackoff, maxBackoff, registrationTimeout int64
}

func (s Settings) ms(caller string) ms {
	if err := s.Validate(); err != nil {
		panic(fmt.Sprintf("%s: invalid Settings (call WithDefaults and Validate first): %v", caller, err))
	}
	return ms{
		interval:            s.Interval.Milliseconds(),
		timeout:             s.Timeout.Milliseconds(),
		initialBackoff:      s.InitialBackoff.Milliseconds(),
		maxBackoff:          s.MaxBackoff.Milliseconds(),
		registrationTimeout: s.RegistrationTimeout.Milliseconds(),
	}
}

// dur formats milliseconds as a Go duration ("5s", "5.2s").
func dur(msec int64) string { return (time.Duration(msec) * time.Millisecond).String() }
