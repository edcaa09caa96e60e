// Package restart decides whether a failed job restarts, and after what delay,
// with Flink's restart strategies, setting names and defaults (Flink 2.x,
// RestartStrategyOptions and the *RestartBackoffTimeStrategy classes).
//
// The package is pure: a Strategy reads no clock (each failure brings its own
// time, in epoch milliseconds), starts no goroutine and draws randomness only
// from the function given to New, so a test or a simulation replays it
// exactly. Acting on a Decision (waiting Delay, redeploying, failing the job)
// is the caller's job.
//
// Configuration goes through four steps:
//
//	c, err := restart.Parse(kv)          // Flink keys and values; syntax and per-key ranges
//	c = c.WithDefaults(checkpointing)    // resolve the type, fill unset settings
//	err = c.Validate()                   // ranges of the selected strategy, across settings
//	s := restart.New(c, rng.Float64)     // the state machine
//
// A Config can also be written directly; a zero field means "not set". The
// four settings whose range includes zero take the constant Zero for an
// explicit 0 (JitterFactor: Zero turns jitter off).
//
// The strategies (restart-strategy.type):
//
//   - none: every failure is final.
//   - fixed-delay: up to fixed-delay.attempts restarts in the job's life,
//     each after fixed-delay.delay.
//   - failure-rate: a restart after failure-rate.delay, unless this failure
//     makes more than max-failures-per-interval failures within any
//     failure-rate-interval (both ends included).
//   - exponential-delay: delays initial-backoff × backoff-multiplier^k,
//     jittered by ± jitter-factor and clamped to [initial-backoff,
//     max-backoff]; k starts over when the job has run reset-backoff-threshold
//     since its last restart; a failure during a pending restart is merged
//     into it; the job fails after attempts-before-reset-backoff restarts
//     without a reset.
//
// With no type set, Flink uses exponential-delay with its default settings
// when checkpointing is enabled, and none otherwise; WithDefaults does the
// same. A strategy that gives up stays given up.
package restart
