package protocol

import (
	"fmt"
)

// ExecutionID names one attempt of one subtask of one vertex of a job.
type ExecutionID struct {
	Job     string
	Vertex  int
	Subtask int
	Attempt int
}

func (e ExecutionID) String() string {
	return fmt.Sprintf("job %s vertex %d subtask %d attempt %d", e.Job, e.Vertex, e.Subtask, e.Attempt)
}

// AllocationID names the slot one attempt of a job holds on a TaskManager:
// the JobManager allocates job slot Slot of attempt Attempt of job Job
// there, and every execution of that attempt in that job slot (subtask
// Slot of each vertex: slot sharing) is deployed under it. It is
// deterministic, so a deployment sent twice carries the same one. Epoch is
// the leader epoch of the JobManager that allocated it (0 until high
// availability gives it meaning). A TaskManager holds at most its slot
// count of allocations with live executions, and refuses a deployment of
// an attempt older than the newest it has seen of the job.
type AllocationID struct {
	Epoch   int64
	Job     string
	Attempt int
	Slot    int
}

func (a AllocationID) String() string {
	return fmt.Sprintf("allocation %s/%d/%d (epoch %d)", a.Job, a.Attempt, a.Slot, a.Epoch)
}

// Deployment asks a TaskManager to run one execution in one of its slots.
// The TaskManager knows the job (its graph and configuration) from the job's
// registration; the deployment says which subtask to run and what to
// restore.
type Deployment struct {
	Exec ExecutionID
	Slot int
	// Allocation is the slot the execution runs in: its Job and Attempt
	// are the execution's, its Slot the job slot.
	Allocation AllocationID
	// KeyHash is the attempt's key hash version (a keygroup.HashVersion):
	// the one of the state it restores, which every task of the attempt
	// must use.
	KeyHash uint8
	// Restore is the state to restore before the task opens; nil for a
	// fresh start.
	Restore *TaskRestore
}

// TaskRestore is what one subtask restores: for each operator of its chain
// that had state, the handles that concern this subtask. The JobManager
// plans it from a checkpoint's metadata (key groups and operator state are
// redistributed when the parallelism changed).
type TaskRestore struct {
	// StorageURL is the root of the store the handles' keys are relative to.
	StorageURL   string
	JobID        string // the job that wrote the checkpoint
	CheckpointID int64
	Operators    []OperatorRestore
}

// OperatorRestore is one operator's state for one subtask.
type OperatorRestore struct {
	OperatorID string
	// Keyed lists the keyed snapshots whose key groups overlap this
	// subtask's range (one, unless the parallelism changed).
	Keyed []KeyedHandle
	// Operator is this subtask's operator state, encoded in the canonical
	// operator snapshot format (already redistributed); nil if none.
	Operator []byte
	// InputChannels and OutputChannels are this subtask's channel state
	// (unaligned checkpoints; same parallelism only).
	InputChannels, OutputChannels []ObjectHandle
}

// TaskStateUpdate reports that an execution reached a state.
type TaskStateUpdate struct {
	Exec  ExecutionID
	State TaskState
	// Failure is set when State is FAILED.
	Failure *Failure
}

// Failure describes why a task failed, as text that can cross a network.
type Failure struct {
	// Message is the whole error, naming the operator and subtask.
	Message string
	// Operator is the name of the operator that failed ("" if none); Task
	// is "chain (i/n)".
	Operator, Task string
	// Stack is the goroutine's stack for panics that were not user errors.
	Stack string
	// Permanent: restarting cannot fix it (failure.Permanent); the job
	// fails whatever the restart strategy.
	Permanent bool
}

// Error lets a Failure stand where an error is expected.
func (f *Failure) Error() string { return f.Message }

// TaskStats are an execution's published counters.
type TaskStats struct {
	RecordsIn, RecordsOut, BytesIn, BytesOut int64
	BackPressuredNanos, IdleNanos, BusyNanos int64
	// InputWatermark and OutputWatermark are math.MinInt64 until the
	// first watermark.
	InputWatermark, OutputWatermark int64
	// OutputIdle: the execution's outputs are idle (WatermarkStatus).
	OutputIdle bool
	// Operators are the operators' own counters (numLateRecordsDropped).
	Operators []OperatorMetric
}

// OperatorMetric is one operator counter of an execution.
type OperatorMetric struct {
	Operator, Name string
	Value          int64
}

// CheckpointKind says why a checkpoint was triggered.
type CheckpointKind uint8

const (
	// Periodic checkpoints come from the configured interval.
	Periodic CheckpointKind = iota
	// Final is the checkpoint after every source ended (FLIP-147), so that
	// two-phase-commit sinks commit all their output.
	Final
	// Savepoint is triggered by the user.
	Savepoint
)

func (k CheckpointKind) String() string {
	switch k {
	case Final:
		return "final"
	case Savepoint:
		return "savepoint"
	}
	return "periodic"
}

// CheckpointOptions travel with a checkpoint's barriers.
type CheckpointOptions struct {
	Kind CheckpointKind
	// Unaligned: barriers overtake in-flight data, which is stored as channel state.
	Unaligned bool
	// AlignedTimeout (ms) > 0 with Unaligned: start aligned, turn unaligned when alignment
	// takes longer than this since the trigger.
	AlignedTimeout int64
	// AtLeastOnce: tasks do not block channels while aligning.
	AtLeastOnce bool
	// Native (savepoints only): keyed state in the backend's own format
	// (Pebble's files); otherwise savepoints are canonical.
	Native bool
	// Stop (savepoints only): stop-with-savepoint. Sources emit nothing
	// after the barrier; Drain makes them send the maximum watermark just
	// before it.
	Stop, Drain bool
}

// TriggerCheckpoint asks a source task to take checkpoint ID and inject its
// barrier.
type TriggerCheckpoint struct {
	Exec      ExecutionID
	ID        int64
	Timestamp int64 // trigger time, epoch ms
	Options   CheckpointOptions
}

// NotifyCheckpoint tells a task that a checkpoint completed (commit what was
// pre-committed for it) or was aborted.
type NotifyCheckpoint struct {
	Exec     ExecutionID
	ID       int64
	Complete bool
	// Final: every task had finished its input when it took this
	// checkpoint, so once it is complete every task may end (FLIP-147).
	Final bool
	// Terminate: the checkpoint was a stop-with-savepoint; once its
	// listeners ran (two-phase-commit sinks committed), the task ends
	// FINISHED without finishing its operators.
	Terminate bool
}

// AcknowledgeCheckpoint says a task finished its part of checkpoint ID:
// everything it wrote is durable, described by the handles.
type AcknowledgeCheckpoint struct {
	Exec      ExecutionID
	ID        int64
	Operators []OperatorSnapshot // the chain's operators that have state
	Metrics   CheckpointMetrics
}

// OperatorSnapshot is one operator's state in one subtask's acknowledgement.
type OperatorSnapshot struct {
	OperatorID string
	State      SubtaskState
	// Shared lists the shared objects (incremental files) the state refers
	// to, for the registry that deletes them when no checkpoint needs them.
	Shared []string
}

// CheckpointMetrics describe one subtask's part of a checkpoint.
type CheckpointMetrics struct {
	// SyncMillis is the synchronous part on the task goroutine; AsyncMillis
	// the upload; AlignmentMillis the time from the first barrier to the
	// snapshot (0 for sources).
	SyncMillis, AsyncMillis, AlignmentMillis int64
	// Bytes is the size of the state; PersistedBytes what was written for
	// this checkpoint (less with incremental checkpoints).
	Bytes, PersistedBytes int64
	Unaligned             bool
	// AckMillis is when the task acknowledged (epoch ms).
	AckMillis int64
	// Finished: the task had finished its input (end of data) when it took
	// the snapshot.
	Finished bool
}

// DeclineCheckpoint says a task could not take a checkpoint.
type DeclineCheckpoint struct {
	Exec   ExecutionID
	ID     int64
	Reason string
	// Counts is false when the decline is not a failure of checkpointing
	// (the task was not ready yet, or the checkpoint was subsumed).
	Counts bool
}

// OperatorEvent is a message between an operator's coordinator on the
// JobManager and one of its subtasks (a source's split requests and
// assignments), in either direction.
type OperatorEvent struct {
	Exec       ExecutionID
	OperatorID string
	Payload    []byte
}

// SourceEnded reports that a source task read all its input, so the
// JobManager can trigger the final checkpoint once every source has.
type SourceEnded struct {
	Exec ExecutionID
}
