package weir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/restart"
)

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
	// heartbeat (default storage.DefaultLeaseTimeout, 10 s). A run takes the
	// lease of its job's name in Dir before it starts, and fails with a
	// message naming the holder while another live run has it; it renews
	// it every third of this, and stops committing (the job fails) when it
	// loses it. A holder on this machine whose process is gone is passed
	// over at once; one elsewhere after this timeout.
	LeaseTimeout time.Duration
	// ChannelStateMemory bounds, per subtask, the input channel state an
	// unaligned checkpoint copies while it records the data that came
	// before each channel's barrier (default DefaultChannelStateMemory).
	// It is bounded by the buffers in flight, so a bound past that is only
	// reached with very large network buffers; a subtask past it declines
	// the checkpoint, naming this setting (a failed checkpoint, counted
	// against TolerableFailures), instead of holding more.
	ChannelStateMemory int64
}

// DefaultChannelStateMemory is CheckpointConfig.ChannelStateMemory's default.
const DefaultChannelStateMemory = 256 << 20

// DefaultCheckpointWriteMemory is CheckpointConfig.WriteMemory's default.
const DefaultCheckpointWriteMemory = 64 << 20

// defaultCheckpointDir is used when CheckpointConfig.Dir is empty.
func defaultCheckpointDir() string { return filepath.Join(os.TempDir(), "weir-checkpoints") }

func (c *CheckpointConfig) settings() coordinator.Settings {
	s := coordinator.Settings{
		Interval: c.Interval.Milliseconds(), Timeout: c.Timeout.Milliseconds(), MinPause: c.MinPause.Milliseconds(),
		MaxConcurrent: c.MaxConcurrent, TolerableFailures: c.TolerableFailures, Retained: c.Retained,
		Unaligned: c.Unaligned, AlignedTimeout: c.AlignedTimeout.Milliseconds(),
	}
	if c.Mode == AtLeastOnce {
		s.Mode = coordinator.AtLeastOnce
	}
	return s.WithDefaults()
}

func (c *CheckpointConfig) barrierMode() barrier.Mode {
	if c.Mode == AtLeastOnce {
		return barrier.AtLeastOnce
	}
	return barrier.ExactlyOnce
}

// restartConfig parses Config.Restart (Flink's restart-strategy.* keys).
func restartConfig(kv map[string]string, checkpointing bool) (restart.Config, error) {
	c, err := restart.Parse(kv)
	if err != nil {
		return c, err
	}
	c = c.WithDefaults(checkpointing)
	return c, c.Validate()
}

// savepointStaging opens the store where the tasks of a job without
// checkpointing write a savepoint's files until the JobManager copies them
// into the savepoint's folder: a new directory under the system's temporary
// directory, which remove deletes (after the store is closed).
func savepointStaging(ctx context.Context, id string) (*storage.Store, func(), error) {
	dir, err := os.MkdirTemp("", "weir-savepoint-staging-"+id[:8]+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("creating a directory to stage savepoints in (the job takes no checkpoints): %w", err)
	}
	remove := func() { os.RemoveAll(dir) }
	s, err := storage.Open(ctx, dir)
	if err == nil {
		err = s.LimitWriteMemory(DefaultCheckpointWriteMemory)
		if err != nil {
			s.Close()
		}
	}
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("opening the savepoint staging directory %s: %w", dir, err)
	}
	return s, remove, nil
}

// resumePoint finds the snapshot a job resumes from: "latest" is the newest
// complete checkpoint or savepoint of a job of this name whose checkpoints
// are in the checkpoint storage (none: a fresh start; a stop's savepoint is
// newer than the checkpoints before it), anything else a checkpoint's or
// savepoint's path or URL.
func resumePoint(ctx context.Context, from string, store *storage.Store, name string, cfg Config) (*storage.Metadata, *storage.Store, error) {
	if from == "latest" {
		if store == nil {
			return nil, nil, fmt.Errorf("resuming from the latest checkpoint needs checkpointing (Config.Checkpointing)")
		}
		snap, err := storage.LatestSnapshot(ctx, store, name, cfg.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("looking for the latest checkpoint in %s: %w", store.URL(), err)
		}
		return snap.Metadata, snap.Store, nil
	}
	s, m, err := storage.Resolve(ctx, from)
	if err != nil {
		return nil, nil, err
	}
	return m, s, nil
}
