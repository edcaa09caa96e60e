package protocol

// TaskManagerRegistration is what a TaskManager tells the JobManager when
// it joins: its resources, which the JobManager then books itself
// (slots, and the network memory each job's result partitions need at
// least), so that scheduling never asks a TaskManager and waits.
type TaskManagerRegistration struct {
	ID    string
	Slots int
	// NetworkMemory is its network memory budget in bytes
	// (taskmanager.memory.network.max).
	NetworkMemory int64
	// DataAddress is where its data plane accepts other TaskManagers'
	// connections (host:port; internal/network/tcp); "" for a TaskManager
	// without one, whose channels are all local (the embedded cluster's).
	DataAddress string
}

// TaskStatsReport is a TaskManager's report of the counters of its
// executions: one message per publish period with every running one, and
// one with an execution's final counters just before its terminal state
// update.
type TaskStatsReport struct {
	TaskManager string
	Tasks       []ExecutionStats
}

// ExecutionStats are one execution's published counters.
type ExecutionStats struct {
	Exec  ExecutionID
	Stats TaskStats
}
