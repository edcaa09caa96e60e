package cluster

import (
	"math"

	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rest"
)

// The view's checkpoint statistics, in the REST API's (Flink's) shapes.

func (v *view) Checkpoints(id string) (rest.CheckpointingStatistics, bool, bool) {
	if _, ok := v.c.JM.Job(id); !ok {
		return rest.CheckpointingStatistics{}, false, false
	}
	st, ok := v.c.JM.Checkpoints(id)
	if !ok {
		return rest.CheckpointingStatistics{}, false, true
	}
	out := rest.CheckpointingStatistics{Counts: rest.CheckpointCounts{Restored: st.Counts.Restored, Total: st.Counts.Triggered,
		InProgress: st.Counts.InProgress, Completed: st.Counts.Completed, Failed: st.Counts.Failed}}
	if st.RestoredFrom > 0 {
		out.Latest.Restored = &rest.RestoredCheckpoint{ID: st.RestoredFrom, RestoreTimestamp: st.RestoredAt, ExternalPath: st.RestoredPath}
		out.Counts.Restored = max(out.Counts.Restored, 1)
	}
	var completed []rest.CheckpointStatistics
	for _, h := range st.History {
		c := checkpointOf(st, h)
		out.History = append(out.History, c)
		switch {
		case h.Status == coordinator.Completed && h.Kind == coordinator.Savepoint && out.Latest.Savepoint == nil:
			out.Latest.Savepoint = &out.History[len(out.History)-1]
		case h.Status == coordinator.Completed && out.Latest.Completed == nil:
			out.Latest.Completed = &out.History[len(out.History)-1]
		case h.Status == coordinator.Failed && out.Latest.Failed == nil:
			out.Latest.Failed = &out.History[len(out.History)-1]
		}
		if h.Status == coordinator.Completed {
			completed = append(completed, c)
		}
	}
	// The pointers above must not move: copy the entries they point to.
	for _, p := range []**rest.CheckpointStatistics{&out.Latest.Completed, &out.Latest.Savepoint, &out.Latest.Failed} {
		if *p != nil {
			c := **p
			*p = &c
		}
	}
	out.Summary = summary(completed)
	return out, true, true
}

// checkpointOf turns a history entry and its acknowledgements into Flink's shape.
func checkpointOf(st jobmanager.CheckpointStats, h coordinator.HistoryEntry) rest.CheckpointStatistics {
	c := rest.CheckpointStatistics{ID: h.ID, Status: h.Status.String(), IsSavepoint: h.Kind == coordinator.Savepoint,
		TriggerTimestamp: h.TriggerTime, LatestAckTimestamp: h.LatestAck, NumSubtasks: h.Tasks, NumAcknowledgedSubtask: h.Acked,
		CheckpointType: "CHECKPOINT", Tasks: map[string]rest.TaskCheckpointStatistics{}, Discarded: h.Discarded}
	switch h.Status {
	case coordinator.Completed:
		c.ClassName = ".CompletedCheckpointStatistics"
		c.ExternalPath = st.StoreURL + "/" + storage.CheckpointPrefix(st.Executions[0].Job, h.ID)
	case coordinator.Failed:
		c.ClassName = ".FailedCheckpointStatistics"
		c.FailureTimestamp, c.FailureMessage = h.EndTime, h.FailureReason
	default:
		c.ClassName = ".PendingCheckpointStatistics"
	}
	if c.IsSavepoint {
		c.CheckpointType = "SAVEPOINT"
	}
	end := h.EndTime
	if end < 0 {
		end = h.LatestAck
	}
	if end >= 0 {
		c.EndToEndDuration = end - h.TriggerTime
	}
	acks := st.Acks[h.ID]
	for i, m := range acks {
		c.StateSize += m.Bytes
		c.CheckpointedSize += m.PersistedBytes
		if m.Unaligned {
			c.CheckpointType = "UNALIGNED_CHECKPOINT"
			c.PersistedData += 0
		}
		e := st.Executions[i]
		vid := st.Graph.Vertices[e.Vertex].ID
		t := c.Tasks[vid]
		t.ID, t.NumSubtasks = h.ID, st.Graph.Vertices[e.Vertex].Parallelism
		t.NumAcknowledgedSubtask++
		t.StateSize += m.Bytes
		t.CheckpointedSize += m.PersistedBytes
		t.LatestAckTimestamp = max(t.LatestAckTimestamp, m.AckMillis)
		t.EndToEndDuration = max(t.EndToEndDuration, m.AckMillis-h.TriggerTime)
		c.Tasks[vid] = t
	}
	for vid, t := range c.Tasks {
		t.Status = c.Status
		c.Tasks[vid] = t
	}
	return c
}

func summary(cs []rest.CheckpointStatistics) rest.CheckpointSummary {
	var s rest.CheckpointSummary
	stat := func(get func(rest.CheckpointStatistics) int64) rest.MinMaxAvg {
		if len(cs) == 0 {
			return rest.MinMaxAvg{}
		}
		m := rest.MinMaxAvg{Min: get(cs[0]), Max: get(cs[0])}
		var sum int64
		for _, c := range cs {
			v := get(c)
			m.Min, m.Max = min(m.Min, v), max(m.Max, v)
			sum += v
		}
		m.Avg = sum / int64(len(cs))
		return m
	}
	s.CheckpointedSize = stat(func(c rest.CheckpointStatistics) int64 { return c.CheckpointedSize })
	s.StateSize = stat(func(c rest.CheckpointStatistics) int64 { return c.StateSize })
	s.EndToEndDuration = stat(func(c rest.CheckpointStatistics) int64 { return c.EndToEndDuration })
	return s
}

func (v *view) CheckpointConfig(id string) (rest.CheckpointConfigInfo, bool, bool) {
	if _, ok := v.c.JM.Job(id); !ok {
		return rest.CheckpointConfigInfo{}, false, false
	}
	st, ok := v.c.JM.Checkpoints(id)
	if !ok {
		return rest.CheckpointConfigInfo{}, false, true
	}
	s := st.Settings
	mode := "exactly_once"
	if s.Mode == coordinator.AtLeastOnce {
		mode = "at_least_once"
	}
	backend := st.StateBackend
	if backend == "" {
		backend = "hashmap"
	}
	interval := s.Interval
	if interval == 0 {
		// No periodic checkpoints (savepoints only, or the final one):
		// Flink's value for it, which its web UI shows as "Periodic
		// checkpoints disabled".
		interval = math.MaxInt64
	}
	return rest.CheckpointConfigInfo{Mode: mode, Interval: interval, Timeout: s.Timeout, MinPause: s.MinPause,
		MaxConcurrent: s.MaxConcurrent, Externalization: rest.ExternalizationConfig{Enabled: true},
		StateBackend: backend, CheckpointStorage: "ObjectStoreCheckpointStorage", CheckpointDir: st.StoreURL,
		UnalignedCheckpoints: s.Unaligned, TolerableFailedCheckpoints: s.TolerableFailures, AlignedCheckpointTimeout: s.AlignedTimeout,
		CheckpointsAfterTasksFinish: true, NumRetained: s.Retained}, true, true
}

func (v *view) CheckpointSubtasks(id string, cid int64, vertexID string) (rest.TaskCheckpointDetails, bool) {
	st, ok := v.c.JM.Checkpoints(id)
	if !ok {
		return rest.TaskCheckpointDetails{}, false
	}
	var h *coordinator.HistoryEntry
	for i := range st.History {
		if st.History[i].ID == cid {
			h = &st.History[i]
		}
	}
	vi := -1
	for i, vx := range st.Graph.Vertices {
		if vx.ID == vertexID {
			vi = i
		}
	}
	if h == nil || vi < 0 {
		return rest.TaskCheckpointDetails{}, false
	}
	c := checkpointOf(st, *h)
	d := rest.TaskCheckpointDetails{TaskCheckpointStatistics: c.Tasks[vertexID]}
	d.ID, d.Status, d.NumSubtasks = cid, c.Status, st.Graph.Vertices[vi].Parallelism
	acks := st.Acks[cid]
	for i, e := range st.Executions {
		if e.Vertex != vi {
			continue
		}
		d.Subtasks = append(d.Subtasks, subtaskOf(e.Subtask, h.TriggerTime, acks, i))
	}
	return d, true
}

func subtaskOf(index int, trigger int64, acks map[int]protocol.CheckpointMetrics, i int) rest.SubtaskCheckpoint {
	m, ok := acks[i]
	if !ok {
		return rest.SubtaskCheckpoint{Index: index, Status: "pending_or_failed"}
	}
	return rest.SubtaskCheckpoint{Index: index, Status: "completed", AckTimestamp: m.AckMillis, EndToEndDuration: m.AckMillis - trigger,
		StateSize: m.Bytes, CheckpointedSize: m.PersistedBytes, Checkpoint: &rest.SubtaskSyncAsync{Sync: m.SyncMillis, Async: m.AsyncMillis},
		Alignment: &rest.SubtaskAlignment{Duration: m.AlignmentMillis}, UnalignedCheckpoint: m.Unaligned, Finished: m.Finished}
}
