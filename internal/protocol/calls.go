package protocol

// The messages below carry the gateway calls whose arguments are not a
// message of their own, so that every call is one message (the loopback
// transport sends them; a network transport will too).

// CancelTask asks a TaskManager to stop an execution
// (TaskManagerGateway.CancelTask).
type CancelTask struct {
	Exec ExecutionID
}

// ReleaseJob asks a TaskManager to free what it holds for a job's ended
// executions (TaskManagerGateway.ReleaseJob): those of attempt Attempt and
// earlier. A later attempt's are kept, since its deployments may reach
// another TaskManager of the same process (whose shuffle is shared) first.
type ReleaseJob struct {
	JobID   string
	Attempt int
}
