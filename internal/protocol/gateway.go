package protocol

// TaskManagerGateway is how the JobManager reaches a TaskManager. Every
// call is a one-way message: nothing comes back as a return value (what
// the JobManager must learn comes back through JobManagerGateway). The
// JobManager never calls it with its lock held, and sends the messages to
// one TaskManager in the order it decided them, so an implementation may
// call back into the JobManager at once.
type TaskManagerGateway interface {
	// RegisterJob makes a job known before any of its deployments; a
	// TaskManager that cannot build it fails the job's deployments with
	// the reason.
	RegisterJob(RegisterJob)
	// DeployAttempt says where each job slot of an attempt runs, ahead of
	// the attempt's deployments on a TaskManager with a data plane.
	DeployAttempt(DeployAttempt)
	// SubmitTask starts an execution; its state changes come back through
	// JobManagerGateway.UpdateTaskState, a failure to start as FAILED.
	SubmitTask(Deployment)
	// CancelTask asks an execution to stop; it reports CANCELED when it has.
	CancelTask(ExecutionID)
	TriggerCheckpoint(TriggerCheckpoint)
	NotifyCheckpoint(NotifyCheckpoint)
	// SendEvent delivers an event from an operator's coordinator.
	SendEvent(OperatorEvent)
	// ReleaseJob frees what the TaskManager holds for a job's ended
	// executions (their network partitions), of the attempt it names and
	// earlier ones.
	ReleaseJob(ReleaseJob)
	// HeartbeatReply answers a Heartbeat; the TaskManager cancels its
	// executions under allocations the reply does not hold.
	HeartbeatReply(HeartbeatReply)
}

// JobManagerGateway is how TaskManagers report to the JobManager.
type JobManagerGateway interface {
	UpdateTaskState(TaskStateUpdate)
	AcknowledgeCheckpoint(AcknowledgeCheckpoint)
	DeclineCheckpoint(DeclineCheckpoint)
	// SendEvent delivers an event to an operator's coordinator.
	SendEvent(OperatorEvent)
	SourceEnded(SourceEnded)
	// ReportTaskStats delivers an execution's final counters, before its
	// terminal state (the periodic ones ride the Heartbeat).
	ReportTaskStats(TaskStatsReport)
	// Heartbeat delivers a TaskManager's heartbeat (every
	// heartbeat.interval): what it runs, for reconciliation, and its
	// executions' counters.
	Heartbeat(Heartbeat)
	// Deregister loses the TaskManager at once (it is leaving).
	Deregister(Deregister)
}
