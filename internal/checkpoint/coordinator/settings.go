package coordinator

import (
	"errors"
	"fmt"
)

// Mode is the consistency a checkpoint gives, Flink's
// execution.checkpointing.mode.
type Mode int

const (
	// ExactlyOnce aligns barriers on tasks with several inputs (the default).
	ExactlyOnce Mode = iota
	// AtLeastOnce does not align: records after a barrier may be in the
	// snapshot and be replayed after a restore.
	AtLeastOnce
)

// String returns the mode as Flink's configuration spells it.
func (m Mode) String() string {
	switch m {
	case ExactlyOnce:
		return "EXACTLY_ONCE"
	case AtLeastOnce:
		return "AT_LEAST_ONCE"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Defaults and limits, with Flink's values.
const (
	DefaultTimeout     = 10 * 60 * 1000 // ms, execution.checkpointing.timeout
	DefaultHistorySize = 10             // web.checkpoints.history
	// MinimalTime is the smallest interval or timeout Flink accepts (ms):
	// anything shorter would keep the coordinator and every task busy.
	MinimalTime = 10
	// MaxQueuedRequests bounds the TriggerNow requests waiting for a free
	// slot; one more is rejected (Output.Rejected), as Flink rejects
	// requests beyond its queue with TOO_MANY_CHECKPOINT_REQUESTS.
	MaxQueuedRequests = 32
)

// Settings configure a Coordinator. Times are in milliseconds. The zero
// value, after WithDefaults, is Flink's default configuration with periodic
// checkpoints disabled.
type Settings struct {
	// Interval between periodic checkpoints, execution.checkpointing.interval;
	// 0 disables periodic checkpoints (TriggerNow still works).
	Interval int64
	// Timeout after which a checkpoint that has not completed expires,
	// execution.checkpointing.timeout (default 10 minutes).
	Timeout int64
	// MinPause from the end of the last checkpoint (completed or failed) to
	// the next periodic trigger, execution.checkpointing.min-pause (default 0).
	MinPause int64
	// MaxConcurrent checkpoints in flight (triggered, not yet fully
	// acknowledged), execution.checkpointing.max-concurrent-checkpoints
	// (default 1).
	MaxConcurrent int
	// TolerableFailures is how many consecutive counted checkpoint failures
	// the job survives, execution.checkpointing.tolerable-failed-checkpoints
	// (default 0: the first counted failure fails the job).
	TolerableFailures int
	// Retained completed checkpoints, state.checkpoints.num-retained
	// (default 1).
	Retained int
	// Mode is execution.checkpointing.mode (default ExactlyOnce).
	Mode Mode
	// Unaligned enables unaligned checkpoints, execution.checkpointing.unaligned
	// (exactly-once only; savepoints are never unaligned).
	Unaligned bool
	// AlignedTimeout, execution.checkpointing.aligned-checkpoint-timeout: an
	// unaligned checkpoint starts aligned and switches to unaligned after this
	// long (0: unaligned from the start). Ignored unless Unaligned.
	AlignedTimeout int64
	// HistorySize is how many recent checkpoints History keeps,
	// web.checkpoints.history (default 10).
	HistorySize int
}

// WithDefaults returns s with Flink's defaults in place of zero values
// (Timeout, MaxConcurrent, Retained, HistorySize). Zero Interval, MinPause,
// TolerableFailures and AlignedTimeout already are the defaults.
func (s Settings) WithDefaults() Settings {
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxConcurrent == 0 {
		s.MaxConcurrent = 1
	}
	if s.Retained == 0 {
		s.Retained = 1
	}
	if s.HistorySize == 0 {
		s.HistorySize = DefaultHistorySize
	}
	return s
}

// Validate checks settings after WithDefaults. Each error names the setting
// as Flink's configuration does; all problems are reported, joined.
func (s Settings) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case s.Interval < 0:
		bad("execution.checkpointing.interval must not be negative, got %d ms", s.Interval)
	case s.Interval > 0 && s.Interval < MinimalTime:
		bad("execution.checkpointing.interval must be 0 (disabled) or at least %d ms, got %d ms", MinimalTime, s.Interval)
	}
	if s.Timeout < MinimalTime {
		bad("execution.checkpointing.timeout must be at least %d ms, got %d ms", MinimalTime, s.Timeout)
	}
	if s.MinPause < 0 {
		bad("execution.checkpointing.min-pause must not be negative, got %d ms", s.MinPause)
	}
	if s.MaxConcurrent < 1 {
		bad("execution.checkpointing.max-concurrent-checkpoints must be at least 1, got %d", s.MaxConcurrent)
	}
	if s.TolerableFailures < 0 {
		bad("execution.checkpointing.tolerable-failed-checkpoints must not be negative, got %d", s.TolerableFailures)
	}
	if s.Retained < 1 {
		bad("state.checkpoints.num-retained must be at least 1, got %d", s.Retained)
	}
	if s.Mode != ExactlyOnce && s.Mode != AtLeastOnce {
		bad("execution.checkpointing.mode must be EXACTLY_ONCE or AT_LEAST_ONCE, got %s", s.Mode)
	}
	if s.Unaligned && s.Mode == AtLeastOnce {
		bad("execution.checkpointing.unaligned needs execution.checkpointing.mode EXACTLY_ONCE, got %s", s.Mode)
	}
	if s.AlignedTimeout < 0 {
		bad("execution.checkpointing.aligned-checkpoint-timeout must not be negative, got %d ms", s.AlignedTimeout)
	}
	if s.HistorySize < 1 {
		bad("web.checkpoints.history must be at least 1, got %d", s.HistorySize)
	}
	return errors.Join(errs...)
}
