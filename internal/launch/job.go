package launch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/protocol"
)

// Job is a job running on the local cluster that Start built for it.
type Job struct {
	id           string
	c            *cluster.Local
	started      time.Time
	done         chan struct{}
	status       protocol.JobState
	err          error
	restoredFrom *storage.Metadata
	restoredURL  string // the store restoredFrom was read from
	checkpoints  int64  // completed, read as the job ended
	// stop, in application mode's TaskManager role (where c is nil),
	// stops serving the application.
	stop func()
}

// Result describes a finished job (weir.JobResult).
type Result struct {
	ID          string
	Status      string
	Duration    time.Duration
	Checkpoints int64
}

// RestoredFrom describes the checkpoint the job started from ("" for a fresh
// start): its id and where it is.
func (j *Job) RestoredFrom() string {
	m := j.restoredFrom
	if m == nil {
		return ""
	}
	if m.Savepoint {
		return fmt.Sprintf("savepoint %d of job %s (%s)", m.CheckpointID, m.JobID, j.restoredURL)
	}
	return fmt.Sprintf("checkpoint %d of job %s", m.CheckpointID, m.JobID)
}

// ID is the job's 32-hex-digit ID.
func (j *Job) ID() string { return j.id }

// RESTAddr is the address of the cluster's REST API, or "".
func (j *Job) RESTAddr() string {
	if j.c == nil {
		return ""
	}
	return j.c.RESTAddr()
}

// Done is closed when the job has ended and the cluster has shut down.
func (j *Job) Done() <-chan struct{} { return j.done }

// CrashTaskManager crashes TaskManager id of the job's cluster and tells
// the JobManager it is lost with cause (cluster.Local.CrashTaskManager).
// Tests use it to fail a job over onto another TaskManager.
func (j *Job) CrashTaskManager(id string, cause error) error {
	if j.c == nil {
		return errors.New("weir: a TaskManager of an application has no cluster of its own")
	}
	return j.c.CrashTaskManager(id, cause)
}

// Cancel asks the job to cancel; Wait returns once it has. A TaskManager
// of an application stops serving it instead (deregistering: the job
// fails over to other TaskManagers).
func (j *Job) Cancel() error {
	if j.stop != nil {
		j.stop()
		return nil
	}
	return j.c.JM.Cancel(j.id)
}

// Wait waits for the job to end. It returns an error for a job that failed
// (naming the operator and subtask) or was canceled, or when ctx ends first.
func (j *Job) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &Result{ID: j.id, Status: string(j.status), Duration: time.Since(j.started), Checkpoints: j.checkpoints}
	return res, j.err
}

// NetworkBuffers reports the job's network memory in bytes while it runs:
// the most that was ever out of its buffer pools at once (summed over
// pools), what the pools have allocated so far (memory follows the data in
// flight), and what they may grow to. maxInUse never exceeds capacity: that
// is the bound on buffered data.
func (j *Job) NetworkBuffers() (maxInUse, allocated, capacity int64) {
	if j.c == nil {
		return 0, 0, 0
	}
	for _, p := range j.c.Shuffle.Pools(j.id) {
		size := int64(p.BufferSize())
		maxInUse += int64(p.MaxInUse()) * size
		allocated += int64(p.Allocated()) * size
		capacity += int64(p.Capacity()) * size
	}
	return maxInUse, allocated, capacity
}

// Cluster is the local cluster the job runs on, for tests and benchmarks
// that read the JobManager directly.
func (j *Job) Cluster() *cluster.Local { return j.c }
