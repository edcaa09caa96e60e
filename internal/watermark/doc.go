// Package watermark holds the pure state machine that combines the
// watermarks and watermark statuses (idle / active) of several inputs into
// one: Flink's StatusWatermarkValve. A task uses one per logical input (its
// channels); it has no I/O, so golden traces test it (testdata). It also
// holds the pure decision of watermark alignment (Alignment), which the
// source coordinators of an alignment group share (internal/operator).
package watermark
