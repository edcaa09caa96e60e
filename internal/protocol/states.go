package protocol

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
