package rest

// JobState is a job's status, with Flink's names.
type JobState string

// Job states, as Flink names them.
const (
	JobCreated    JobState = "CREATED"
	JobRunning    JobState = "RUNNING"
	JobFailing    JobState = "FAILING"
	JobFailed     JobState = "FAILED"
	JobCancelling JobState = "CANCELLING"
	JobCanceled   JobState = "CANCELED"
	JobFinished   JobState = "FINISHED"
	JobRestarting JobState = "RESTARTING"
	JobSuspended  JobState = "SUSPENDED"
)

// Terminal reports whether a job in this state will never run again:
// FAILED, CANCELED or FINISHED. (SUSPENDED is only terminal for this
// JobManager, as in Flink, so it is not included.)
func (s JobState) Terminal() bool {
	return s == JobFailed || s == JobCanceled || s == JobFinished
}

// TaskState is a subtask's execution state, with Flink's names. A vertex's
// aggregate status uses the same names.
type TaskState string

// Task (execution) states, as Flink names them.
const (
	TaskCreated   TaskState = "CREATED"
	TaskScheduled TaskState = "SCHEDULED"
	TaskDeploying TaskState = "DEPLOYING"
	// TaskInitializing: the task restores its state and opens its operators.
	TaskInitializing TaskState = "INITIALIZING"
	TaskRunning      TaskState = "RUNNING"
	TaskFinished     TaskState = "FINISHED"
	TaskCanceling    TaskState = "CANCELING"
	TaskCanceled     TaskState = "CANCELED"
	TaskFailed       TaskState = "FAILED"
	// TaskReconciling: in Flink, a task that a new JobManager takes over
	// after a failover without restarting it. Weir never reports it; it is
	// listed so that state-count maps have every one of Flink's names.
	TaskReconciling TaskState = "RECONCILING"
)

// Terminal reports whether an execution in this state has ended.
func (s TaskState) Terminal() bool {
	return s == TaskFinished || s == TaskCanceled || s == TaskFailed
}

// TaskStates lists every task state in Flink's order.
var TaskStates = []TaskState{
	TaskCreated, TaskScheduled, TaskDeploying, TaskInitializing, TaskRunning,
	TaskFinished, TaskCanceling, TaskCanceled, TaskFailed, TaskReconciling,
}

// CountStates counts states into a map that has every TaskState as a key, as
// Flink's "tasks" and "status-counts" maps do. Use it with the states of a
// vertex's subtasks for Vertex.Tasks, and with the vertices' aggregate states
// for JobDetails.StatusCounts.
func CountStates(states []TaskState) map[TaskState]int {
	m := make(map[TaskState]int, len(TaskStates))
	for _, s := range TaskStates {
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
func AggregateVertexState(counts map[TaskState]int, parallelism int) TaskState {
	switch {
	case counts[TaskFailed] > 0:
		return TaskFailed
	case counts[TaskCanceling] > 0:
		return TaskCanceling
	case counts[TaskCanceled] > 0:
		return TaskCanceled
	case counts[TaskRunning] > 0:
		return TaskRunning
	case counts[TaskFinished] > 0:
		if counts[TaskFinished] == parallelism {
			return TaskFinished
		}
		return TaskRunning
	default:
		return TaskCreated
	}
}

// TaskCountsOf turns a state->count map into the lowercase counts of GET
// /jobs/overview. Total is the sum of all counts.
func TaskCountsOf(m map[TaskState]int) TaskCounts {
	var c TaskCounts
	for s, n := range m {
		c.Total += n
		switch s {
		case TaskCreated:
			c.Created += n
		case TaskScheduled:
			c.Scheduled += n
		case TaskDeploying:
			c.Deploying += n
		case TaskInitializing:
			c.Initializing += n
		case TaskRunning:
			c.Running += n
		case TaskFinished:
			c.Finished += n
		case TaskCanceling:
			c.Canceling += n
		case TaskCanceled:
			c.Canceled += n
		case TaskFailed:
			c.Failed += n
		case TaskReconciling:
			c.Reconciling += n
		}
	}
	return c
}

// OverviewOf derives a job's GET /jobs/overview entry from its details: the
// subtask counts are summed over the vertices, and the last modification is
// the latest state timestamp (the start time if there is none).
func OverviewOf(d JobDetails) JobOverview {
	all := make(map[TaskState]int, len(TaskStates))
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
