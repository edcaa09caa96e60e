package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/task"
	"github.com/weirhq/weir/internal/taskmanager"
)

// jobSpecs builds what the JobManager and the TaskManagers need to run the
// job: network sizes, checkpointing, the restart strategy and the
// checkpoint to resume from. With checkpointing it takes the lineage lease
// of the job's name in the checkpoint storage first, so that two runs never
// resume one lineage at once; with fencing (high availability) the
// leader's term fences the checkpoints instead. res.close releases what it
// holds (also on error).
func jobSpecs(ctx context.Context, cfg Config, id string, jg *graph.JobGraph, mode operator.Mode, restAddr string, fencing *jobmanager.Fencing) (_ *jobmanager.JobSpec, _ *taskmanager.Job, res *jobResources, _ error) {
	name := cfg.Name
	res = &jobResources{}
	spec := &jobmanager.JobSpec{ID: id, Name: name, Graph: jg, Clock: cfg.Clock, OnCheckpoint: cfg.OnCheckpoint, OnRestart: cfg.OnRestart,
		StateBackend: cfg.StateBackend,
		Network:      jobmanager.NetworkConfig{BufferSize: cfg.BufferSize, BuffersPerChannel: cfg.BuffersPerChannel, FloatingBuffers: cfg.FloatingBuffers}}
	tmJob := &taskmanager.Job{ID: id, Graph: jg, Mode: mode, BufferTimeout: cfg.BufferTimeout, BufferSize: cfg.BufferSize,
		BuffersPerChannel: cfg.BuffersPerChannel, FloatingBuffers: cfg.FloatingBuffers, Clock: cfg.Clock, StateBackend: cfg.StateBackend}
	var store *storage.Store
	if cp := cfg.Checkpointing; cp != nil {
		settings := cp.settings()
		if err := settings.Validate(); err != nil {
			return nil, nil, res, err
		}
		dir := cp.Dir
		if dir == "" {
			dir = defaultCheckpointDir()
		}
		var err error
		if store, err = storage.Open(ctx, dir); err != nil {
			return nil, nil, res, fmt.Errorf("opening the checkpoint storage: %w", err)
		}
		res.stores = append(res.stores, store)
		mem := writeMemory(cfg)
		if mem < 0 {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.WriteMemory is %d bytes: want a positive number, or 0 for the default (%d)", mem, DefaultCheckpointWriteMemory)
		}
		if err := store.LimitWriteMemory(mem); err != nil {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.WriteMemory: %w", err)
		}
		spDir := cp.SavepointDir
		if spDir == "" {
			spDir = cfg.SavepointDir
		}
		spec.Checkpoints = &jobmanager.CheckpointSpec{Settings: settings, Store: store, SavepointDir: spDir}
		if fencing != nil {
			spec.Checkpoints.Fencing = *fencing
		} else {
			info := storage.LocalProcess(storage.LeaseInfo{Owner: id, REST: restAddr})
			if res.lease, err = storage.AcquireLease(ctx, store, name, info, cp.LeaseTimeout, nil); err != nil {
				return nil, nil, res, err
			}
			lease := res.lease
			spec.Checkpoints.Fence = func(ctx context.Context, _ int64) error { return lease.Check(ctx) }
		}
		csm := cp.ChannelStateMemory
		if csm == 0 {
			csm = DefaultChannelStateMemory
		}
		if csm < 0 {
			return nil, nil, res, fmt.Errorf("Config.Checkpointing.ChannelStateMemory is %d bytes: want a positive number, or 0 for the default (%d)", csm, DefaultChannelStateMemory)
		}
		tmJob.Checkpoints = &task.Checkpoints{Store: store, Mode: cp.barrierMode(), Incremental: cp.Incremental,
			Interval: time.Duration(settings.Interval) * time.Millisecond, ChannelStateMemory: csm}
	} else if mode == operator.Streaming {
		staging, remove, err := savepointStaging(ctx, id)
		if err != nil {
			return nil, nil, res, err
		}
		res.stores = append(res.stores, staging)
		res.after = append(res.after, remove)
		spec.Checkpoints = &jobmanager.CheckpointSpec{Settings: coordinator.Settings{}.WithDefaults(), Store: staging,
			SavepointDir: cfg.SavepointDir, SavepointsOnly: true}
		tmJob.Checkpoints = &task.Checkpoints{Store: staging, Mode: barrier.ExactlyOnce, SavepointsOnly: true}
	}
	rc, err := restartConfig(cfg.Restart, cfg.Checkpointing != nil)
	if err != nil {
		return nil, nil, res, err
	}
	spec.Restart = rc
	spec.SlotRequestTimeout = cfg.SlotRequestTimeout
	spec.Lineage = id // a fresh start begins a lineage
	if cfg.ResumeFrom != "" {
		m, s, err := resumePoint(ctx, cfg.ResumeFrom, store, name, cfg.Logger)
		if err != nil {
			return nil, nil, res, err
		}
		if s != nil && s != store {
			res.stores = append(res.stores, s)
		}
		spec.Restore, spec.RestoreStore = m, s
		if m != nil {
			spec.Lineage = m.LineageOf()
		}
		spec.AllowNonRestoredState = cfg.AllowNonRestoredState
		if spec.Checkpoints != nil {
			// A resumed run continues its lineage: the earlier runs'
			// checkpoints count towards Retained, and what they no
			// longer need goes (jobmanager's storage hygiene).
			spec.Checkpoints.ContinueLineage = true
		}
	}
	if cfg.Checkpointing != nil {
		// Without checkpoints (savepoints only) sinks keep no lineage:
		// sink.Context.Lineage is "" then.
		tmJob.Checkpoints.Lineage = spec.Lineage
	}
	return spec, tmJob, res, nil
}

// jobResources are what a run holds besides its cluster: the stores it
// opened and its lineage lease.
type jobResources struct {
	stores      []*storage.Store
	lease       *storage.Lease
	stopKeeping context.CancelFunc
	kept        chan struct{} // closed when Keep returned
	after       []func()      // run last, after the stores are closed
	beforeClose []func()      // run first, while the stores are open
}

// keepLease renews the lease until close, calling lost if another run takes
// it.
func (r *jobResources) keepLease(lost func(error)) {
	if r.lease == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	r.stopKeeping, r.kept = stop, make(chan struct{})
	go func() {
		defer close(r.kept)
		r.lease.Keep(ctx, lost)
	}()
}

// close stops renewing and releases the lease, closes the stores, then
// runs after.
func (r *jobResources) close() {
	for _, f := range r.beforeClose {
		f()
	}
	if r.stopKeeping != nil {
		r.stopKeeping()
		<-r.kept // a heartbeat in flight must not overwrite the release
	}
	if r.lease != nil {
		_ = r.lease.Release(context.Background())
	}
	for _, s := range r.stores {
		s.Close()
	}
	for _, f := range r.after {
		f()
	}
}

// writeMemory is the checkpoint store's write memory (its default when
// unset, or without checkpointing: a savepoint staging store's).
func writeMemory(cfg Config) int64 {
	if cp := cfg.Checkpointing; cp != nil && cp.WriteMemory != 0 {
		return cp.WriteMemory
	}
	return DefaultCheckpointWriteMemory
}
