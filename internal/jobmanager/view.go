package jobmanager

import (
	"math"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// SlotCounts returns the total and free slots of the cluster.
func (jm *JobManager) SlotCounts() (total, free int) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	for _, tm := range jm.tms {
		total += tm.reg.Slots
		free += tm.free
	}
	return total, free
}

// NumTaskManagers is the number of registered TaskManagers.
func (jm *JobManager) NumTaskManagers() int {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return len(jm.tms)
}

// JobInfo is a consistent copy of what the JobManager knows about a job.
type JobInfo struct {
	ID, Name       string
	Status         protocol.JobState
	Start, End     time.Time // End is zero while running
	Times          map[protocol.JobState]time.Time
	MaxParallelism int
	Vertices       []VertexInfo
	Failure        *Failure
	Exceptions     []Failure
	Restarts       int
}

// VertexInfo is a vertex with its subtasks' states and summed counters.
type VertexInfo struct {
	ID, Name       string
	Parallelism    int
	MaxParallelism int
	Tasks          []protocol.TaskState
	Stats          protocol.TaskStats
	// Watermarks are each subtask's input and output watermarks
	// (math.MinInt64: none yet, or not running).
	Watermarks [][2]int64
	// Subtasks are each subtask's published counters, nil for a subtask
	// whose execution no TaskManager reported yet (ReportTaskStats).
	Subtasks []*protocol.TaskStats
	// TaskManagers are the ids of the TaskManagers each subtask's current
	// execution is placed on ("" while it waits for a slot), and Attempt
	// the job's current attempt.
	TaskManagers []string
	Attempt      int
	Operators    []string // node names of the chain
	Inputs       []InputInfo
}

// InputInfo describes a network edge into a vertex.
type InputInfo struct {
	FromVertex string
	Partition  string
	Pattern    string
}

// JobIDs returns the IDs of all jobs in submission order.
func (jm *JobManager) JobIDs() []string {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return append([]string(nil), jm.ids...)
}

// Job returns a copy of a job's state and counters.
func (jm *JobManager) Job(id string) (JobInfo, bool) {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	if !ok {
		jm.mu.Unlock()
		return JobInfo{}, false
	}
	g := j.spec.Graph
	info := JobInfo{ID: id, Name: g.Name, Status: j.state.status, Start: j.started, End: j.ended,
		Times: map[protocol.JobState]time.Time{}, MaxParallelism: g.MaxParallelism, Failure: j.failure,
		Exceptions: append([]Failure(nil), j.exceptions...), Restarts: j.restarts}
	for k, v := range j.times {
		info.Times[k] = v
	}
	tasks := append([]protocol.TaskState(nil), j.state.tasks...)
	stats := append([]*protocol.TaskStats(nil), j.stats...)
	placed := make([]string, len(j.tmOf))
	for i, t := range j.tmOf {
		if t != nil {
			placed[i] = t.reg.ID
		}
	}
	attempt := j.attempt
	jm.mu.Unlock()

	k := 0
	for _, v := range g.Vertices {
		vi := VertexInfo{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Attempt: attempt}
		for _, n := range v.Nodes {
			vi.Operators = append(vi.Operators, n.Name)
		}
		for _, e := range v.Inputs {
			vi.Inputs = append(vi.Inputs, InputInfo{FromVertex: e.Source.ID, Partition: e.Partition.String(), Pattern: e.Pattern.String()})
		}
		for range v.Parallelism {
			vi.Tasks = append(vi.Tasks, tasks[k])
			wm := [2]int64{math.MinInt64, math.MinInt64}
			if s := stats[k]; s != nil {
				wm = [2]int64{s.InputWatermark, s.OutputWatermark}
				vi.Stats.RecordsIn += s.RecordsIn
				vi.Stats.RecordsOut += s.RecordsOut
				vi.Stats.BytesIn += s.BytesIn
				vi.Stats.BytesOut += s.BytesOut
				vi.Stats.BackPressuredNanos += s.BackPressuredNanos
				vi.Stats.IdleNanos += s.IdleNanos
				vi.Stats.BusyNanos += s.BusyNanos
			}
			vi.Watermarks = append(vi.Watermarks, wm)
			vi.Subtasks = append(vi.Subtasks, stats[k])
			vi.TaskManagers = append(vi.TaskManagers, placed[k])
			k++
		}
		info.Vertices = append(info.Vertices, vi)
	}
	return info, true
}

// ReportTaskStats implements protocol.JobManagerGateway: it keeps the
// latest counters of each execution of the current attempts, which Job
// returns. Reports of earlier attempts are dropped.
func (jm *JobManager) ReportTaskStats(r protocol.TaskStatsReport) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	for k := range r.Tasks {
		if j, i, ok := jm.execLocked(r.Tasks[k].Exec); ok {
			j.stats[i] = &r.Tasks[k].Stats
		}
	}
}

// TaskManagerInfo is what the JobManager knows of a registered TaskManager.
type TaskManagerInfo struct {
	ID                string
	Slots, FreeSlots  int
	NetworkMemory     int64
	LastHeard         time.Time // its latest heartbeat, or its registration (zero: unknown)
	Heartbeats        int
	RunningExecutions int
}

// TaskManagers lists the registered TaskManagers in registration order.
func (jm *JobManager) TaskManagers() []TaskManagerInfo {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	out := make([]TaskManagerInfo, 0, len(jm.tms))
	for _, tm := range jm.tms {
		info := TaskManagerInfo{ID: tm.reg.ID, Slots: tm.reg.Slots, FreeSlots: tm.free, NetworkMemory: tm.reg.NetworkMemory}
		if jm.hb != nil {
			if st, ok := jm.hb.m.Target(tm.reg.ID); ok {
				info.LastHeard, info.Heartbeats = time.UnixMilli(st.LastHeard), st.Heartbeats
			}
		}
		for _, id := range jm.ids {
			j := jm.jobs[id]
			for i, t := range j.tmOf {
				if t == tm && !j.state.tasks[i].Terminal() {
					info.RunningExecutions++
				}
			}
		}
		out = append(out, info)
	}
	return out
}
