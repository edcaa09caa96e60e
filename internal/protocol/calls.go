package protocol

// The messages below carry the gateway calls whose arguments or results are
// not a message of their own, so that every call is one message each way
// (the loopback transport sends them; a network transport will too).

// TaskManagerRegistration is what a TaskManager tells the JobManager when
// it registers: its ID and number of slots.
type TaskManagerRegistration struct {
	ID    string
	Slots int
}

// CancelTask asks a TaskManager to stop an execution
// (TaskManagerGateway.CancelTask).
type CancelTask struct {
	Exec ExecutionID
}

// ReleaseJob asks a TaskManager to free what it holds for a job's ended
// executions (TaskManagerGateway.ReleaseJob).
type ReleaseJob struct {
	JobID string
}

// NetworkMemoryRequest asks a TaskManager for its network memory
// (TaskManagerGateway.NetworkMemory).
type NetworkMemoryRequest struct{}

// NetworkMemoryReply answers NetworkMemoryRequest: the TaskManager's network
// memory budget in bytes and how much of it running jobs do not reserve.
type NetworkMemoryReply struct {
	Capacity, Free int64
}

// SubmitTaskReply answers a Deployment (TaskManagerGateway.SubmitTask).
type SubmitTaskReply struct {
	// Error says why the TaskManager refused the deployment; "" when it
	// accepted it.
	Error string
}

// TaskStatsRequest asks a TaskManager for an execution's last published
// counters (TaskManagerGateway.TaskStats).
type TaskStatsRequest struct {
	Exec ExecutionID
}

// TaskStatsReply answers TaskStatsRequest; Found is false when the
// TaskManager does not know the execution (Stats is then zero).
type TaskStatsReply struct {
	Stats TaskStats
	Found bool
}
