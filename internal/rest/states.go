package rest

import "github.com/weirhq/weir/internal/protocol"

// CountStates counts states into a map that has every protocol.TaskState as a key, as
// Flink's "tasks" and "status-counts" maps do. Use it with the states of a
// vertex's subtasks for Vertex.Tasks, and with the vertices' aggregate states
// for JobDetails.StatusCounts.
func CountStates(states []protocol.TaskState) map[protocol.TaskState]int {
	m := make(map[protocol.TaskState]int, len(protocol.TaskStates))
	for _, s := range protocol.TaskStates {
		m[s] = 0
	}
	for _, s := range states {
		m[s]++
	}
	return m
}

// AggregateVertexState is a vertex's status given its subtasks' state counts
// and its parallelism, by Flink's rule: any FAILED makes it FAILED, then any
// CANCELING, then any CANCELED, then any RUNNING makes it RUNNING; all
// FINISHED is FINISHED and some FINISHED is RUNNING; anything else is CREATED.
func AggregateVertexState(counts map[protocol.TaskState]int, parallelism int) protocol.TaskState {
	switch {
	case counts[protocol.TaskFailed] > 0:
		return protocol.TaskFailed
	case counts[protocol.TaskCanceling] > 0:
		return protocol.TaskCanceling
	case counts[protocol.TaskCanceled] > 0:
		return protocol.TaskCanceled
	case counts[protocol.TaskRunning] > 0:
		return protocol.TaskRunning
	case counts[protocol.TaskFinished] > 0:
		if counts[protocol.TaskFinished] == parallelism {
			return protocol.TaskFinished
		}
		return protocol.TaskRunning
	default:
		return protocol.TaskCreated
	}
}

// TaskCountsOf turns a state->count map into the lowercase counts of GET
// /jobs/overview. Total is the sum of all counts.
func TaskCountsOf(m map[protocol.TaskState]int) TaskCounts {
	var c TaskCounts
	for s, n := range m {
		c.Total += n
		switch s {
		case protocol.TaskCreated:
			c.Created += n
		case protocol.TaskScheduled:
			c.Scheduled += n
		case protocol.TaskDeploying:
			c.Deploying += n
		case protocol.TaskInitializing:
			c.Initializing += n
		case protocol.TaskRunning:
			c.Running += n
		case protocol.TaskFinished:
			c.Finished += n
		case protocol.TaskCanceling:
			c.Canceling += n
		case protocol.TaskCanceled:
			c.Canceled += n
		case protocol.TaskFailed:
			c.Failed += n
		case protocol.TaskReconciling:
			c.Reconciling += n
		}
	}
	return c
}

// OverviewOf derives a job's GET /jobs/overview entry from its details: the
// subtask counts are summed over the vertices, and the last modification is
// the latest state timestamp (the start time if there is none).
func OverviewOf(d JobDetails) JobOverview {
	all := make(map[protocol.TaskState]int, len(protocol.TaskStates))
	for _, v := range d.Vertices {
		for s, n := range v.Tasks {
			all[s] += n
		}
	}
	last := d.StartTime
	for _, t := range d.Timestamps {
		last = max(last, t)
	}
	return JobOverview{
		ID:               d.ID,
		Name:             d.Name,
		State:            d.State,
		JobType:          JobTypeStreaming,
		StartTime:        d.StartTime,
		EndTime:          d.EndTime,
		Duration:         d.Duration,
		LastModification: last,
		Tasks:            TaskCountsOf(all),
	}
}
