package launch

import (
	"time"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/taskmanager"
)

// registration is the RegisterJob message of job j as this process built
// it: everything a TaskManager in another process needs to build the same
// job (program and arguments aside, which the caller adds). writeMemory
// bounds the checkpoint store's write buffers there.
func registration(j *taskmanager.Job, writeMemory int64) protocol.RegisterJob {
	m := protocol.RegisterJob{JobID: j.ID, Fingerprint: j.Graph.Fingerprint, MaxParallelism: j.Graph.MaxParallelism,
		Batch: j.Mode == operator.Batch, BufferTimeout: int64(j.BufferTimeout), BufferSize: j.BufferSize,
		BuffersPerChannel: j.BuffersPerChannel, FloatingBuffers: j.FloatingBuffers, StateBackend: j.StateBackend}
	if c := j.Checkpoints; c != nil {
		m.Checkpoints = &protocol.JobCheckpoints{StorageURL: c.Store.URL(), WriteMemory: writeMemory,
			AtLeastOnce: c.Mode == barrier.AtLeastOnce, Incremental: c.Incremental, Interval: c.Interval.Milliseconds(),
			ChannelStateMemory: c.ChannelStateMemory, Lineage: c.Lineage, SavepointsOnly: c.SavepointsOnly}
	}
	return m
}

// millis is a RegisterJob's milliseconds as a duration.
func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
