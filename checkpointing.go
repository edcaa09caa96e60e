package weir

import "time"

// CheckpointingMode is the guarantee checkpoints give (Flink's
// execution.checkpointing.mode).
type CheckpointingMode int

const (
	// ExactlyOnce aligns barriers: state reflects every record exactly once.
	ExactlyOnce CheckpointingMode = iota
	// AtLeastOnce does not align: after a restore some records may be
	// counted twice, but barriers never hold data back.
	AtLeastOnce
)

// CheckpointConfig turns on checkpoints, with Flink's settings.
type CheckpointConfig struct {
	// Interval between checkpoints (execution.checkpointing.interval); 0
	// takes checkpoints only at the end of bounded input.
	Interval time.Duration
	// Timeout after which a checkpoint is given up
	// (execution.checkpointing.timeout, default 10 min).
	Timeout time.Duration
	// MinPause between the end of one checkpoint and the start of the next
	// (execution.checkpointing.min-pause).
	MinPause time.Duration
	// MaxConcurrent checkpoints in flight (default 1).
	MaxConcurrent int
	// TolerableFailures is how many consecutive failed checkpoints fail the
	// job (execution.checkpointing.tolerable-failed-checkpoints, default 0).
	TolerableFailures int
	Mode              CheckpointingMode
	// Unaligned makes barriers overtake in-flight data, which is stored in
	// the checkpoint (execution.checkpointing.unaligned).
	Unaligned bool
	// AlignedTimeout, with Unaligned, starts checkpoints aligned and turns
	// them unaligned where a barrier is still held up by data this long
	// after the trigger (execution.checkpointing.aligned-checkpoint-timeout).
	// Ignored without Unaligned, as in Flink.
	AlignedTimeout time.Duration
	// Retained completed checkpoints (state.checkpoints.num-retained, default 1).
	// They are kept when the job ends, is canceled or its process dies.
	Retained int
	// Dir is where checkpoints go (execution.checkpointing.dir): a path,
	// file:///path, mem://name or s3://bucket/prefix?endpoint=...; default a
	// directory weir-checkpoints under the system's temporary directory.
	Dir string
	// Incremental makes the Pebble backend upload only new files
	// (execution.checkpointing.incremental).
	Incremental bool
	// SavepointDir is the default target directory of savepoints
	// (state.savepoints.dir): a path or URL as Dir; "" makes every
	// savepoint request name its own.
	SavepointDir string
	// WriteMemory bounds the memory that the job's checkpoint and savepoint
	// writes buffer at once, in bytes (default 64 MiB; Weir's own setting).
	// Each open write holds 2 MiB on a file store and 5 MiB on S3; a subtask
	// whose write would pass the bound waits for another write to end, so
	// many subtasks upload in turns. Less than one write's buffers fails
	// the job at its start.
	WriteMemory int64
	// LeaseTimeout is how long the lineage lease of a run outlives its last
	// heartbeat (default 10 s). A run takes the
	// lease of its job's name in Dir before it starts, and fails with a
	// message naming the holder while another live run has it; it renews
	// it every third of this, and stops committing (the job fails) when it
	// loses it. A holder on this machine whose process is gone is passed
	// over at once; one elsewhere after this timeout.
	LeaseTimeout time.Duration
	// ChannelStateMemory bounds, per subtask, the input channel state an
	// unaligned checkpoint copies while it records the data that came
	// before each channel's barrier (default 256 MiB).
	// It is bounded by the buffers in flight, so a bound past that is only
	// reached with very large network buffers; a subtask past it declines
	// the checkpoint, naming this setting (a failed checkpoint, counted
	// against TolerableFailures), instead of holding more.
	ChannelStateMemory int64
}
