// Package watermark holds the pure state machine that combines the
// watermarks and watermark statuses (idle / active) of several inputs into
// one: Flink's StatusWatermarkValve. A task uses one per logical input (its
// channels); it has no I/O, so golden traces test it (testdata).
package watermark
