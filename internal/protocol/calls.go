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
// Ended says the job has ended: the TaskManager forgets it (RegisterJob)
// and closes what it opened for it once its executions have returned.
type ReleaseJob struct {
	JobID   string
	Attempt int
	Ended   bool
}

// DeployAttempt tells a TaskManager where each job slot of one attempt of
// a job runs (TaskManagerGateway.DeployAttempt), so that it can request
// the input channels whose producers run in another TaskManager over the
// data plane and publish its partitions to remote consumers. The
// JobManager sends it, ahead of the attempt's deployments there, to each
// TaskManager that holds a slot of the attempt, when the attempt's slots
// are on TaskManagers with a data plane (an embedded cluster's have none:
// their shared shuffle is every channel's).
type DeployAttempt struct {
	JobID   string
	Attempt int
	// Slots[s] is where job slot s runs: subtask s of every vertex (slot
	// sharing).
	Slots []SlotPlacement
}

// SlotPlacement is the TaskManager holding one job slot of an attempt.
type SlotPlacement struct {
	// TaskManager is its registration id; DataAddress where its data
	// plane listens (TaskManagerRegistration.DataAddress).
	TaskManager, DataAddress string
	Allocation               AllocationID
}

// RegisterJob makes a job known to a TaskManager before any of its
// deployments (TaskManagerGateway.RegisterJob): what the TaskManager's
// process needs to build the job's graph itself and to run its subtasks.
// The JobManager sends it to every TaskManager when the job is submitted
// and to each TaskManager that registers while the job runs, ahead of any
// deployment there (one TaskManager's messages keep their order).
type RegisterJob struct {
	JobID, Name string
	// Program says how the graph is built: "" for a graph already in the
	// TaskManager's process (the embedded cluster, by JobID); else the
	// name of a job compiled into the binary (session mode), which the
	// TaskManager builds from Args.
	Program string
	Args    []string
	// Fingerprint is the graph's fingerprint as the JobManager built it:
	// a TaskManager whose graph differs refuses the job, naming both.
	Fingerprint string
	// MaxParallelism is the graph's, which a resume may have adopted from
	// its snapshot (the TaskManager compiles its graph with it).
	MaxParallelism int
	// Batch: the job runs in batch mode.
	Batch bool
	// BufferTimeout (nanoseconds), BufferSize, BuffersPerChannel and
	// FloatingBuffers size the network (weir.Config).
	BufferTimeout                                  int64
	BufferSize, BuffersPerChannel, FloatingBuffers int
	StateBackend                                   string
	// Checkpoints is nil when the job takes neither checkpoints nor
	// savepoints (batch mode).
	Checkpoints *JobCheckpoints
}

// JobCheckpoints is how a job's subtasks checkpoint (RegisterJob).
type JobCheckpoints struct {
	// StorageURL is where checkpoints are written; every process of the
	// job opens it (file:// on a shared path, or s3://).
	StorageURL string
	// WriteMemory bounds the store's write buffers in each process.
	WriteMemory int64
	AtLeastOnce bool
	Incremental bool
	// Interval (milliseconds) is sink.Context.CheckpointInterval.
	Interval           int64
	ChannelStateMemory int64
	Lineage            string
	// SavepointsOnly: no checkpoints, savepoints only.
	SavepointsOnly bool
	// Probe, when set, is the key of an object the JobManager wrote into
	// the storage with the bytes ProbeToken: a TaskManager that cannot
	// read them back does not share the storage, and refuses the job
	// (decision 24 of docs/distributed-runtime.md).
	Probe, ProbeToken string
}
