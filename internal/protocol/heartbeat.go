package protocol

// The membership messages (docs/distributed-runtime.md, decisions 8 and
// 10-13): a TaskManager's Heartbeat every heartbeat.interval, the
// JobManager's HeartbeatReply to each, and Deregister when a TaskManager
// leaves on purpose. The decisions themselves are internal/heartbeat's.

// Heartbeat is what a TaskManager tells the JobManager every
// heartbeat.interval (JobManagerGateway.Heartbeat): what it runs, for
// reconciliation, and its counters, for the REST API. It follows the
// TaskManager's earlier messages on the session, so an execution whose
// terminal state was reported before it is not in it.
type Heartbeat struct {
	TaskManager string
	// Seq numbers the TaskManager's heartbeats in its session, from 1; the
	// reply names the one it answers (HeartbeatReply.Acked).
	Seq uint64
	// Processed is the seq of the last JobManager message of the session
	// the TaskManager had processed when it took this heartbeat, when the
	// transport numbers its messages; 0 when it does not (the loopback),
	// which makes reconciliation flag no execution as missing.
	Processed uint64
	// Executions are the executions it runs (submitted and not ended).
	Executions []ExecutionReport
	// FreeNetworkMemory is its network memory not held by result
	// partitions, in bytes; HeapStateUsed the bytes its hashmap state
	// tables hold (0 when they are not bounded).
	FreeNetworkMemory, HeapStateUsed int64
	// Stats are the counters and watermarks of its executions, as a
	// TaskStatsReport carries them.
	Stats []ExecutionStats
}

// ExecutionReport is one execution a Heartbeat reports.
type ExecutionReport struct {
	Exec       ExecutionID
	Allocation AllocationID
	State      TaskState
}

// HeartbeatReply is the JobManager's answer to a Heartbeat
// (TaskManagerGateway.HeartbeatReply): the allocations it holds on the
// TaskManager, whose executions not under one of them the TaskManager
// cancels (they belong to an attempt the JobManager has ended).
type HeartbeatReply struct {
	// Acked is the Seq of the heartbeat answered.
	Acked uint64
	// Held are the allocations the JobManager holds on the TaskManager.
	Held []AllocationID
}

// Deregister is a TaskManager's goodbye (JobManagerGateway.Deregister,
// SIGTERM): the JobManager loses it at once, and may use its slots at once,
// since it cancels its executions itself.
type Deregister struct {
	TaskManager string
	Reason      string
}
