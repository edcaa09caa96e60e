package protocol

// TaskManagerGateway is how the JobManager reaches a TaskManager. Calls
// must not block for long: the JobManager makes them under its lock.
type TaskManagerGateway interface {
	ID() string
	NumSlots() int
	// NetworkMemory returns the TaskManager's network memory budget in bytes
	// and how much of it is not reserved by running jobs.
	NetworkMemory() (capacity, free int64)
	// SubmitTask starts an execution; its state changes come back through
	// JobManagerGateway.UpdateTaskState.
	SubmitTask(Deployment) error
	// CancelTask asks an execution to stop; it reports CANCELED when it has.
	CancelTask(ExecutionID)
	TriggerCheckpoint(TriggerCheckpoint)
	NotifyCheckpoint(NotifyCheckpoint)
	// SendEvent delivers an event from an operator's coordinator.
	SendEvent(OperatorEvent)
	// TaskStats returns the last published counters of an execution.
	TaskStats(ExecutionID) (TaskStats, bool)
	// ReleaseJob frees what the TaskManager holds for a job's ended
	// executions (their network partitions).
	ReleaseJob(jobID string)
}

// JobManagerGateway is how TaskManagers report to the JobManager.
type JobManagerGateway interface {
	UpdateTaskState(TaskStateUpdate)
	AcknowledgeCheckpoint(AcknowledgeCheckpoint)
	DeclineCheckpoint(DeclineCheckpoint)
	// SendEvent delivers an event to an operator's coordinator.
	SendEvent(OperatorEvent)
	SourceEnded(SourceEnded)
}
