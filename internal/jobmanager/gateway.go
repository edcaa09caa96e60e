package jobmanager

import (
	"fmt"
	"github.com/weirhq/weir/internal/rest"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/operator"
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

// RuntimeConfig is the job-wide configuration every task needs.
type RuntimeConfig struct {
	Mode          operator.Mode
	BufferTimeout time.Duration
	// BufferSize is the size of network buffers in bytes.
	BufferSize int
	// BuffersPerChannel is the receiver's credit per channel; FloatingBuffers
	// are extra buffers per result partition shared by its subpartitions.
	BuffersPerChannel, FloatingBuffers int
	Clock                              clock.Clock
	// StateBackend is the keyed state backend ("hashmap" or "pebble");
	// StateDir the job's working directory for on-disk state.
	StateBackend, StateDir string
}

// PoolBounds returns the fewest and the most buffers of a result partition
// with n subpartitions. The fewest is one per subpartition: the writer keeps
// a buffer open per channel, and with one more in flight it always makes
// progress. The most is what its receivers may hold (their credit) plus the
// floating buffers that absorb bursts.
func (c RuntimeConfig) PoolBounds(n int) (fewest, most int) {
	return n, n*c.BuffersPerChannel + c.FloatingBuffers
}

// JobSpec is a submitted job.
type JobSpec struct {
	ID     string
	Graph  *graph.JobGraph
	Config RuntimeConfig
}

// Deployment asks a TaskManager to run one execution in one of its slots.
// In one process it carries the job's graph; a remote gateway would send the
// job ID and graph fingerprint, and the worker would build its own graph.
type Deployment struct {
	Exec ExecutionID
	Job  *JobSpec
	Slot int
}

// TaskManagerGateway is how the JobManager reaches a TaskManager.
type TaskManagerGateway interface {
	ID() string
	NumSlots() int
	// NetworkMemory returns the TaskManager's network memory budget in bytes
	// and how much of it is not reserved by running jobs.
	NetworkMemory() (capacity, free int64)
	// SubmitTask starts an execution; its state changes come back through
	// JobManagerGateway.UpdateTaskState.
	SubmitTask(d Deployment) error
	// CancelTask asks an execution to stop; it reports CANCELED when it has.
	CancelTask(e ExecutionID)
	// TaskStats returns the last published counters of an execution.
	TaskStats(e ExecutionID) (operator.StatsSnapshot, bool)
	// ReleaseJob frees what the TaskManager holds for a finished job.
	ReleaseJob(jobID string)
}

// JobManagerGateway is how TaskManagers report to the JobManager.
type JobManagerGateway interface {
	UpdateTaskState(e ExecutionID, st rest.TaskState, err error)
}
