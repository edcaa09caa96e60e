package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// ErrJobNotFound is returned for an unknown job ID.
var ErrJobNotFound = errors.New("job not found")

// ExecutionID names one attempt of one subtask of one vertex of a job.
type ExecutionID = protocol.ExecutionID

// NetworkConfig sizes a job's network buffers, for the memory check.
type NetworkConfig struct {
	BufferSize, BuffersPerChannel, FloatingBuffers int
}

// PoolBounds returns the fewest and the most buffers of a result partition
// with n subpartitions (see taskmanager.Job.PoolBounds).
func (c NetworkConfig) PoolBounds(n int) (fewest, most int) {
	return n, n*c.BuffersPerChannel + c.FloatingBuffers
}

// CheckpointSpec is a job's checkpointing.
type CheckpointSpec struct {
	Settings coordinator.Settings
	// Store is where the job's checkpoints go (the job's directory is its ID).
	Store *storage.Store
	// SavepointDir is the default target directory of savepoints
	// (state.savepoints.dir); "" needs one per request.
	SavepointDir string
	// Fencing: how the checkpoints are fenced (the lineage lease, or high
	// availability's leader term).
	Fencing
	// ContinueLineage: the job continues the earlier runs of its lineage
	// (it was started to resume them: --from). Their checkpoints in Store
	// count towards Settings.Retained and what they no longer need is
	// deleted (hygiene.go). False for a fresh start, which leaves every
	// other job ID alone.
	ContinueLineage bool
	// SavepointsOnly: the job takes savepoints and nothing else (its user
	// turned checkpointing off; Flink's coordinator runs for savepoints
	// all the same). Settings.Interval must be 0; no final checkpoint is
	// taken at the end of input, and Store only stages each savepoint's
	// files until they are copied into its folder.
	SavepointsOnly bool
}

// Fencing is how a job's checkpoints are fenced against another run (the
// lineage lease) or another leader (high availability).
type Fencing struct {
	// Fence, if set, is asked before checkpoint or savepoint id's metadata
	// is written, which completes it and lets sinks commit: an error
	// (another run took the job's lineage lease, or another leader leads)
	// fails the checkpoint, and storage.ErrLeaseLost the job at once,
	// without restarts, so two runs never commit one lineage's output.
	Fence func(ctx context.Context, id int64) error
	// Completed, if set, is told of each checkpoint or savepoint whose
	// metadata was written (path: where a resume finds it), before any task
	// hears that it completed: an error fails the checkpoint instead, so
	// sinks never commit one that Completed did not record (high
	// availability records it in its store, fenced by the leader's term).
	Completed func(ctx context.Context, id int64, path string) error
	// FirstID, if above the id after the restored checkpoint's, is the
	// first checkpoint id of the run (high availability starts a new
	// leader's ids above every id an earlier leader fenced).
	FirstID int64
}

// JobSpec is a submitted job.
type JobSpec struct {
	ID, Name string
	// Register is what every TaskManager is told of the job before any of
	// its deployments (protocol.RegisterJob; Submit fills in ID and Name).
	Register protocol.RegisterJob
	// Lineage is recorded in every checkpoint and savepoint of the job
	// (storage.Metadata.Lineage): the restored snapshot's lineage, or, for
	// a fresh start, a new one.
	Lineage string
	Graph   *graph.JobGraph
	Network NetworkConfig
	// Checkpoints is nil when the job takes none.
	Checkpoints *CheckpointSpec
	// Restart is the restart strategy (with defaults applied).
	Restart restart.Config
	// Restore, if set, is the checkpoint the job starts from, read from
	// RestoreStore.
	Restore      *storage.Metadata
	RestoreStore *storage.Store
	// AllowNonRestoredState lets a job start from a checkpoint that holds
	// state of operators it does not have: that state is skipped, with a
	// log line naming each operator (Flink's allowNonRestoredState).
	AllowNonRestoredState bool
	Clock                 clock.Clock
	// StateBackend names the keyed state backend, for the REST API and to
	// refuse restoring Pebble's native format into another backend.
	StateBackend string
	// OnCheckpoint, if set, is called when a checkpoint completes (with the
	// JobManager's lock held: it must be quick and not call back).
	OnCheckpoint func(id int64, final bool)
	// OnRestart, if set, is called when the job restarts after a failure,
	// with the checkpoint it restores (0: from the beginning).
	OnRestart func(attempt int, checkpoint int64, cause error)
	// SlotRequestTimeout is how long an attempt waits for enough free slots
	// before it fails through the restart strategy (Flink's
	// slot.request.timeout; 0: DefaultSlotRequestTimeout).
	SlotRequestTimeout time.Duration
}

// DefaultSlotRequestTimeout is slot.request.timeout's default, Flink's.
const DefaultSlotRequestTimeout = 5 * time.Minute

// JobManager schedules jobs onto the slots of its TaskManagers, restarts
// them after failures and drives their checkpoints.
type JobManager struct {
	logger *slog.Logger

	mu mutex // guards everything below and every job's fields
	// tms are the registered TaskManagers, in registration order, each
	// under its own registration id (at most one per id). A lost one is
	// removed (TaskManagerLost) and marked lost.
	tms  []*taskManager
	jobs map[string]*job
	ids  []string // submission order
	// savepoints are the savepoint requests kept for polling, by request
	// id; savepointOrder their order (bounded, see maxSavepointRequests).
	savepoints     map[string]*SavepointRequest
	savepointOrder []string
	// hb watches the TaskManagers' heartbeats (heartbeat.go); nil before
	// MonitorHeartbeats.
	hb *monitor
}

// job is the JobManager's record of one job.
type job struct {
	spec    *JobSpec
	state   *jobState
	attempt int
	execs   []ExecutionID  // of the current attempt
	index   map[[2]int]int // (vertex, subtask) -> execution index
	// need is the job's slots: its largest parallelism (slot sharing puts
	// subtask i of every vertex into job slot i).
	need int
	// slotTM[s] is the TaskManager job slot s of the current attempt is
	// allocated on (nil: the attempt holds no slots), and tmOf[i] the one
	// execution i runs on (nil: not placed); both are set when the attempt
	// is deployed.
	slotTM []*taskManager
	tmOf   []*taskManager
	// waiting is the current attempt's wait for slots (nil: not waiting).
	waiting *slotWait
	times   map[protocol.JobState]time.Time
	started time.Time
	ended   time.Time
	failure *Failure
	// exceptions are every failure, oldest first (bounded).
	exceptions []Failure
	done       chan struct{}
	// stats[i] are the latest counters execution i's TaskManager reported
	// (nil: none yet this attempt); replaced, never changed in place.
	stats []*protocol.TaskStats
	// deployed[i] is set before execution i is submitted; executions not
	// deployed are never sent a cancel (the deploy loop reports them).
	deployed []bool
	strategy restart.Strategy
	// restartDelay is the strategy's delay for the pending restart.
	restartDelay time.Duration
	// redeployAt: the next attempt is deployed no sooner (a TaskManager it
	// ran on was lost by silence and may still be fencing itself; zero:
	// no bound). Reset when it starts.
	redeployAt time.Time
	restarts   int
	// coords are the operator coordinators (source enumerators), by operator ID.
	coords map[string]*opCoordinator
	// shared holds what the coordinators of the current attempt share
	// (opcoordinator.Context.Shared), made anew with them.
	shared map[string]any
	cp     *checkpoints // nil without checkpointing
	// savepoint is the savepoint request in progress (nil: none); one at a
	// time per job.
	savepoint *SavepointRequest
	// restore is what the current attempt restored from (nil: fresh start).
	restore *storage.Metadata
	// restoreStore is the store restore's handles are in.
	restoreStore *storage.Store
	// keyHash is the current attempt's key hash version (keyHashFor).
	keyHash keygroup.HashVersion
	// netReserved is the network memory the current attempt booked on
	// each TaskManager, released when the attempt ends.
	netReserved map[*taskManager]int64
	// io counts the background writes and deletions in the checkpoint
	// storage, so that the stores are closed only after them (Drain).
	io sync.WaitGroup
}

// Failure is one failure of a job.
type Failure struct {
	Err      error
	TaskName string       // "" when not caused by a task
	Exec     *ExecutionID // the failed execution, if a task failed
	Stack    string       // where a panic happened, the user's frames first; "" for errors
	// TaskManager is the id of the TaskManager the failed execution ran
	// on ("" when none was placed).
	TaskManager string
	Time        time.Time
}

// New returns a JobManager without TaskManagers.
func New(logger *slog.Logger) *JobManager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &JobManager{logger: logger, jobs: map[string]*job{}}
}

// RegisterTaskManager adds a TaskManager, its slots and its network
// memory, which the JobManager books from then on; gw is how to reach it.
// A TaskManager registering under the id of a registered one replaces it:
// the old one is lost first (TaskManagerLost). Attempts waiting for slots
// are deployed if they fit now.
func (jm *JobManager) RegisterTaskManager(reg protocol.TaskManagerRegistration, gw protocol.TaskManagerGateway) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.loseLocked(reg.ID, errors.New("it registered again"), time.Time{})
	t := &taskManager{reg: reg, gw: gw, free: reg.Slots}
	jm.tms = append(jm.tms, t)
	jm.monitorRegisterLocked(reg.ID)
	jm.logger.Info("TaskManager registered", "taskmanager", reg.ID, "slots", reg.Slots)
	// The jobs that run now may be deployed there (a failover onto a
	// spare): it learns of them first.
	for _, id := range jm.ids {
		if j := jm.jobs[id]; j != nil && !j.over() {
			t.send(j.spec.Register)
		}
	}
	jm.wakeWaitingLocked()
}

// Fail fails a running job at once, without restarts (its lineage lease
// was lost: another run writes its checkpoints now). Failing a job that
// ended is not an error.
func (jm *JobManager) Fail(id string, err error) error {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, ok := jm.jobs[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	if !j.state.status.Terminal() {
		jm.failFromCoordinatorLocked(j, err)
	}
	return nil
}

// Cancel cancels a running job. Canceling a job that already ended is not an error.
func (jm *JobManager) Cancel(id string) error {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	if !ok {
		jm.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	wasRunning := j.state.status == protocol.JobRunning
	toCancel := j.state.cancel()
	if len(toCancel) > 0 || j.state.status == protocol.JobCancelling || j.state.status == protocol.JobCanceled {
		j.times[protocol.JobCancelling] = j.spec.Clock.Now()
	}
	if wasRunning && j.cp != nil {
		jm.suspendCheckpointsLocked(j)
	}
	jm.cancelLocked(j, toCancel)
	jm.afterUpdateLocked(j)
	jm.mu.Unlock()
	return nil
}

// Wait blocks until the job ends or ctx is done, and returns its final state
// and, for a failed job, its root cause.
func (jm *JobManager) Wait(ctx context.Context, id string) (protocol.JobState, error) {
	st, f, err := jm.WaitFailure(ctx, id)
	if f != nil {
		return st, f.Err
	}
	return st, err
}

// WaitFailure is Wait returning the failure itself (nil unless FAILED).
func (jm *JobManager) WaitFailure(ctx context.Context, id string) (protocol.JobState, *Failure, error) {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	jm.mu.Unlock()
	if !ok {
		return "", nil, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j.state.status == protocol.JobFailed && j.failure != nil {
		f := *j.failure
		return j.state.status, &f, nil
	}
	return j.state.status, nil, nil
}

// Drain waits, after the job ended, for its background writes and
// deletions in the checkpoint storage.
func (jm *JobManager) Drain(id string) {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	jm.mu.Unlock()
	if ok {
		j.io.Wait()
		jm.sweepShared(j)
	}
}

// over reports whether the job has ended (finishLocked ran).
func (j *job) over() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// Done is closed when the job has ended.
func (jm *JobManager) Done(id string) <-chan struct{} {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j, ok := jm.jobs[id]; ok {
		return j.done
	}
	return nil
}
