package launch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/restart"
)

// defaultCheckpointDir is used when Checkpointing.Dir is empty.
func defaultCheckpointDir() string { return filepath.Join(os.TempDir(), "weir-checkpoints") }

func (c *Checkpointing) settings() coordinator.Settings {
	s := coordinator.Settings{
		Interval: c.Interval.Milliseconds(), Timeout: c.Timeout.Milliseconds(), MinPause: c.MinPause.Milliseconds(),
		MaxConcurrent: c.MaxConcurrent, TolerableFailures: c.TolerableFailures, Retained: c.Retained,
		Unaligned: c.Unaligned, AlignedTimeout: c.AlignedTimeout.Milliseconds(),
	}
	if c.AtLeastOnce {
		s.Mode = coordinator.AtLeastOnce
	}
	return s.WithDefaults()
}

func (c *Checkpointing) barrierMode() barrier.Mode {
	if c.AtLeastOnce {
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
func resumePoint(ctx context.Context, from string, store *storage.Store, name string, logger *slog.Logger) (*storage.Metadata, *storage.Store, error) {
	if from == "latest" {
		if store == nil {
			return nil, nil, fmt.Errorf("resuming from the latest checkpoint needs checkpointing (Config.Checkpointing)")
		}
		snap, err := storage.LatestSnapshot(ctx, store, name, logger)
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
