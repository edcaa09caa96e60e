package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
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
	// Fence, if set, is asked before each checkpoint's or savepoint's
	// metadata is written, which completes it and lets sinks commit: an
	// error (another run took the job's lineage lease) fails the job at
	// once instead, without restarts, so two runs never commit one
	// lineage's output.
	Fence func(context.Context) error
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

// JobSpec is a submitted job.
type JobSpec struct {
	ID, Name string
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
}

// JobManager schedules jobs onto the slots of its TaskManagers, restarts
// them after failures and drives their checkpoints.
type JobManager struct {
	logger *slog.Logger

	mu   sync.Mutex // guards everything below and every job's fields
	tms  []protocol.TaskManagerGateway
	free []int // free slots per TaskManager, parallel to tms
	jobs map[string]*job
	ids  []string // submission order
	// savepoints are the savepoint requests kept for polling, by request
	// id; savepointOrder their order (bounded, see maxSavepointRequests).
	savepoints     map[string]*SavepointRequest
	savepointOrder []string
}

// job is the JobManager's record of one job.
type job struct {
	spec    *JobSpec
	state   *jobState
	attempt int
	execs   []ExecutionID  // of the current attempt
	index   map[[2]int]int // (vertex, subtask) -> execution index
	tmOf    []protocol.TaskManagerGateway
	slots   map[int]int // TaskManager index -> slots held
	slotTM  []int       // slot -> TaskManager index
	times   map[protocol.JobState]time.Time
	started time.Time
	ended   time.Time
	failure *Failure
	// exceptions are every failure, oldest first (bounded).
	exceptions []Failure
	done       chan struct{}
	// deployed[i] is set before execution i is submitted; executions not
	// deployed are never sent a cancel (the deploy loop reports them).
	deployed []bool
	strategy restart.Strategy
	// restartDelay is the strategy's delay for the pending restart.
	restartDelay time.Duration
	restarts     int
	// coords are the operator coordinators (source enumerators), by operator ID.
	coords map[string]*opCoordinator
	// shared holds what the coordinators of the current attempt share
	// (operator.CoordinatorContext.Shared), made anew with them.
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
	Time     time.Time
}

// New returns a JobManager without TaskManagers.
func New(logger *slog.Logger) *JobManager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &JobManager{logger: logger, jobs: map[string]*job{}}
}

// RegisterTaskManager adds a TaskManager and its slots.
func (jm *JobManager) RegisterTaskManager(tm protocol.TaskManagerGateway) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.tms = append(jm.tms, tm)
	jm.free = append(jm.free, tm.NumSlots())
}

// Submit schedules a job and starts deploying its tasks. Slot sharing puts
// subtask i of every vertex into the job's i-th slot, so a job needs as
// many slots as its largest parallelism. It returns once the job is
// accepted; deployment goes on in the background.
func (jm *JobManager) Submit(spec *JobSpec) error {
	if spec.Clock == nil {
		spec.Clock = clock.System{}
	}
	jm.mu.Lock()
	_, dup := jm.jobs[spec.ID]
	jm.mu.Unlock()
	if dup {
		return fmt.Errorf("jobmanager: job %s was already submitted", spec.ID)
	}
	if spec.Checkpoints != nil && spec.Checkpoints.Store != nil {
		jm.writeJobInfo(spec) // I/O: outside the lock
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if _, dup := jm.jobs[spec.ID]; dup {
		return fmt.Errorf("jobmanager: job %s was already submitted", spec.ID)
	}
	g := spec.Graph
	need := 0
	for _, v := range g.Vertices {
		need = max(need, v.Parallelism)
	}
	now := spec.Clock.Now()
	j := &job{spec: spec, index: map[[2]int]int{}, slots: map[int]int{},
		times: map[protocol.JobState]time.Time{protocol.JobCreated: now}, started: now, done: make(chan struct{}),
		strategy: restart.New(spec.Restart, rand.Float64), restore: spec.Restore, restoreStore: spec.RestoreStore}
	for vi, v := range g.Vertices {
		for s := range v.Parallelism {
			j.index[[2]int{vi, s}] = len(j.execs)
			j.execs = append(j.execs, ExecutionID{Job: spec.ID, Vertex: vi, Subtask: s})
		}
	}
	j.state = newJobState(len(j.execs))
	j.tmOf = make([]protocol.TaskManagerGateway, len(j.execs))
	jm.jobs[spec.ID] = j
	jm.ids = append(jm.ids, spec.ID)

	// Allocate shared slots: slot s lives on TaskManager slotTM[s].
	total := 0
	for ti := range jm.tms {
		total += jm.free[ti]
		for range jm.free[ti] {
			if len(j.slotTM) < need {
				j.slotTM = append(j.slotTM, ti)
			}
		}
	}
	if len(j.slotTM) < need {
		err := fmt.Errorf("not enough task slots: the job needs %d (its largest parallelism), the cluster has %d free", need, total)
		jm.failLocked(j, err)
		return err
	}
	if err := jm.checkNetworkMemory(spec, j.slotTM); err != nil {
		jm.failLocked(j, err)
		return err
	}
	plan, err := jm.planRestore(j)
	if err == nil {
		err = jm.startCoordinators(j)
	}
	if err == nil && spec.Checkpoints != nil {
		err = jm.startCheckpoints(j)
	}
	if err != nil {
		jm.failLocked(j, err)
		return err
	}
	for _, ti := range j.slotTM {
		jm.free[ti]--
		j.slots[ti]++
	}
	j.state.start()
	j.times[protocol.JobRunning] = spec.Clock.Now()
	jm.logger.Info("job submitted", "job", spec.ID, "name", g.Name, "tasks", len(j.execs))
	if cs := spec.Checkpoints; cs != nil && cs.ContinueLineage {
		j.io.Add(1)
		go jm.cleanLineage(j)
	}
	jm.deployLocked(j, plan)
	return nil
}

// deployLocked submits the current attempt's executions, in the background.
func (jm *JobManager) deployLocked(j *job, plan map[ExecutionID]*protocol.TaskRestore) {
	deps := make([]protocol.Deployment, len(j.execs))
	for i, e := range j.execs {
		j.tmOf[i] = jm.tms[j.slotTM[e.Subtask]]
		j.state.tasks[i] = protocol.TaskDeploying
		deps[i] = protocol.Deployment{Exec: e, Slot: e.Subtask, KeyHash: uint8(j.keyHash), Restore: plan[e]}
	}
	j.deployed = make([]bool, len(deps))
	go jm.deploy(j, j.attempt, deps)
}

// deploy submits a job's executions one by one. It stops as soon as the job
// is canceled or fails (a task failed, or a deployment did), and reports the
// executions it did not deploy as canceled, so a cancel takes effect at once
// even while thousands of tasks are being deployed.
func (jm *JobManager) deploy(j *job, attempt int, deps []protocol.Deployment) {
	for i, d := range deps {
		jm.mu.Lock()
		if j.attempt != attempt {
			jm.mu.Unlock()
			return
		}
		if j.state.status != protocol.JobRunning {
			for k := i; k < len(deps); k++ {
				j.state.update(k, protocol.TaskCanceled, nil, false)
			}
			jm.afterUpdateLocked(j)
			jm.mu.Unlock()
			return
		}
		j.deployed[i] = true
		tm := j.tmOf[i]
		jm.mu.Unlock()
		if err := tm.SubmitTask(d); err != nil {
			jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskFailed,
				Failure: &protocol.Failure{Message: fmt.Sprintf("deploying %s: %v", d.Exec, err)}})
		}
	}
}

// checkNetworkMemory fails a job whose result partitions' minimum buffers do
// not fit the network memory of the TaskManagers it is placed on, before
// anything is deployed, with a message that says what to change.
func (jm *JobManager) checkNetworkMemory(spec *JobSpec, slotTM []int) error {
	need, channels := networkNeeds(spec.Graph, spec.Network, slotTM, len(jm.tms))
	for ti, n := range need {
		capacity, free := jm.tms[ti].NetworkMemory()
		if n <= free {
			continue
		}
		have := fmt.Sprintf("its network memory is %s", network.FormatBytes(capacity))
		if free < capacity {
			have += fmt.Sprintf(", of which %s are free", network.FormatBytes(free))
		}
		return fmt.Errorf("not enough network memory: the job needs %s on TaskManager %s (one %s buffer for each of its %d output channels) but %s; "+
			"raise taskmanager.memory.network.max (weir.Config.NetworkMemory, weir run --network-memory), lower the parallelism, or use smaller network buffers (--buffer-size)",
			network.FormatBytes(n), jm.tms[ti].ID(), network.FormatBytes(int64(spec.Network.BufferSize)), channels[ti], have)
	}
	return nil
}

// networkNeeds returns, per TaskManager, the bytes of buffers that the result
// partitions of the subtasks placed on it need at least (slot s is on
// TaskManager slotTM[s]; subtask s of every vertex runs in slot s), and their
// number of output channels.
func networkNeeds(g *graph.JobGraph, cfg NetworkConfig, slotTM []int, tms int) (bytes []int64, channels []int64) {
	bytes, channels = make([]int64, tms), make([]int64, tms)
	for _, v := range g.Vertices {
		for _, e := range v.Outputs {
			for s := range v.Parallelism {
				lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, s)
				fewest, _ := cfg.PoolBounds(hi - lo)
				bytes[slotTM[s]] += int64(fewest) * int64(cfg.BufferSize)
				channels[slotTM[s]] += int64(hi - lo)
			}
		}
	}
	return bytes, channels
}

// failLocked fails a job that could not be scheduled or restarted.
func (jm *JobManager) failLocked(j *job, err error) {
	j.failure = &Failure{Err: err, Time: j.spec.Clock.Now()}
	j.exceptions = append(j.exceptions, *j.failure)
	for _, i := range j.state.fail(err) {
		if j.deployed == nil || !j.deployed[i] {
			j.state.update(i, protocol.TaskCanceled, nil, false) // nothing was deployed
		}
	}
	jm.afterUpdateLocked(j)
}

// maxExceptions bounds a job's failure history.
const maxExceptions = 64

// UpdateTaskState implements protocol.JobManagerGateway.
func (jm *JobManager) UpdateTaskState(u protocol.TaskStateUpdate) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, i, ok := jm.execLocked(u.Exec)
	if !ok {
		return
	}
	now := j.spec.Clock.Now()
	var err error
	if u.Failure != nil {
		err = u.Failure
	}
	restartOK := false
	if u.State == protocol.TaskFailed && j.state.status == protocol.JobRunning && !j.state.tasks[i].Terminal() {
		name := j.taskName(u.Exec)
		exec := u.Exec
		f := Failure{Err: err, TaskName: name, Exec: &exec, Time: now}
		if u.Failure != nil {
			f.Stack = u.Failure.Stack
		}
		j.failure = &f
		if len(j.exceptions) == maxExceptions {
			j.exceptions = j.exceptions[1:]
		}
		j.exceptions = append(j.exceptions, f)
		d := j.strategy.OnFailure(now.UnixMilli())
		if u.Failure != nil && u.Failure.Permanent {
			d = restart.Decision{Reason: "the failure is permanent: restarting cannot fix it"}
		}
		restartOK, j.restartDelay = d.Restart, d.Delay
		attrs := []any{"job", j.spec.ID, "task", name, "err", err}
		if f.Stack != "" { // a panic: where it happened
			attrs = append(attrs, "stack", f.Stack)
		}
		if d.Restart {
			jm.logger.Warn("task failed; restarting the job", append(attrs, "delay", d.Delay, "strategy", d.Reason)...)
		} else {
			jm.logger.Info("task failed; failing the job", append(attrs, "strategy", d.Reason)...)
			if j.spec.Restart.Type != restart.None {
				err = fmt.Errorf("%w (not restarted: %s)", err, d.Reason)
				j.failure.Err = err
			}
		}
	}
	wasRunning := j.state.status == protocol.JobRunning
	toCancel := j.state.update(i, u.State, err, restartOK)
	if wasRunning && j.state.status != protocol.JobRunning && j.cp != nil {
		jm.suspendCheckpointsLocked(j)
	}
	cancels := jm.cancelsLocked(j, toCancel)
	jm.afterUpdateLocked(j)
	for _, c := range cancels {
		c()
	}
}

// execLocked finds the job and execution index of an execution of the
// current attempt; messages from earlier attempts are dropped.
func (jm *JobManager) execLocked(e ExecutionID) (*job, int, bool) {
	j, ok := jm.jobs[e.Job]
	if !ok || e.Attempt != j.attempt {
		return nil, 0, false
	}
	i, ok := j.index[[2]int{e.Vertex, e.Subtask}]
	return j, i, ok
}

func (j *job) taskName(e ExecutionID) string {
	v := j.spec.Graph.Vertices[e.Vertex]
	return fmt.Sprintf("%s (%d/%d)", v.Name, e.Subtask+1, v.Parallelism)
}

// afterUpdateLocked reacts to the job state: a finished restart cycle
// schedules the next attempt; a terminal job is recorded as ended.
func (jm *JobManager) afterUpdateLocked(j *job) {
	if j.state.readyToRestart() {
		attempt, delay := j.attempt, j.restartDelay
		j.restartDelay = -1 // scheduled
		if delay >= 0 {
			tm := j.spec.Clock.NewTimer(delay)
			go func() {
				select {
				case <-tm.C():
				case <-j.done:
					tm.Stop()
					return
				}
				jm.restart(j, attempt)
			}()
		}
	}
	if j.state.status.Terminal() {
		jm.finishLocked(j)
	}
}

// restart deploys the next attempt of a restarting job from its latest
// completed checkpoint (or from the beginning without one).
func (jm *JobManager) restart(j *job, attempt int) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j.attempt != attempt || !j.state.readyToRestart() {
		return
	}
	if j.cp != nil {
		if m := j.cp.latest; m != nil {
			j.restore, j.restoreStore = m, j.spec.Checkpoints.Store
		}
	}
	for _, tm := range jm.tms {
		tm.ReleaseJob(j.spec.ID)
	}
	j.attempt++
	j.restarts++
	for i := range j.execs {
		j.execs[i].Attempt = j.attempt
	}
	plan, err := jm.planRestore(j)
	if err == nil {
		err = jm.startCoordinators(j)
	}
	if err != nil {
		jm.failLocked(j, fmt.Errorf("restarting the job: %w", err))
		return
	}
	j.state.restart()
	j.times[protocol.JobRunning] = j.spec.Clock.Now()
	if j.cp != nil {
		jm.resumeCheckpointsLocked(j)
	}
	from, cid := "the beginning", int64(0)
	if j.restore != nil {
		from, cid = fmt.Sprintf("checkpoint %d", j.restore.CheckpointID), j.restore.CheckpointID
	}
	if j.spec.OnRestart != nil {
		var cause error
		if j.failure != nil {
			cause = j.failure.Err
		}
		j.spec.OnRestart(j.attempt, cid, cause)
	}
	jm.logger.Warn("job restarted", "job", j.spec.ID, "attempt", j.attempt, "from", from)
	jm.deployLocked(j, plan)
}

// cancelsLocked returns the calls that cancel the deployed executions among
// toCancel, to be made after the lock is released.
func (jm *JobManager) cancelsLocked(j *job, toCancel []int) []func() {
	cancels := make([]func(), 0, len(toCancel))
	for _, k := range toCancel {
		if j.deployed == nil || !j.deployed[k] {
			continue
		}
		tm, ex := j.tmOf[k], j.execs[k]
		cancels = append(cancels, func() { tm.CancelTask(ex) })
	}
	return cancels
}

// finishLocked records the end of a job and frees its slots.
func (jm *JobManager) finishLocked(j *job) {
	select {
	case <-j.done:
		return
	default:
	}
	j.ended = j.spec.Clock.Now()
	j.times[j.state.status] = j.ended
	for ti, n := range j.slots {
		jm.free[ti] += n
	}
	j.slots = nil
	for _, tm := range jm.tms {
		tm.ReleaseJob(j.spec.ID)
	}
	for _, c := range j.coords {
		c.close()
	}
	if j.cp != nil {
		jm.stopCheckpointsLocked(j)
	}
	jm.savepointFailedLocked(j, 0, fmt.Sprintf("the job ended (%s) before the savepoint completed", j.state.status))
	close(j.done)
	jm.logger.Info("job ended", "job", j.spec.ID, "status", j.state.status)
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
	cancels := jm.cancelsLocked(j, toCancel)
	jm.afterUpdateLocked(j)
	jm.mu.Unlock()
	for _, c := range cancels {
		c()
	}
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

// Done is closed when the job has ended.
func (jm *JobManager) Done(id string) <-chan struct{} {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j, ok := jm.jobs[id]; ok {
		return j.done
	}
	return nil
}

// SlotCounts returns the total and free slots of the cluster.
func (jm *JobManager) SlotCounts() (total, free int) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	for i, tm := range jm.tms {
		total += tm.NumSlots()
		free += jm.free[i]
	}
	return total, free
}

// NumTaskManagers is the number of registered TaskManagers.
func (jm *JobManager) NumTaskManagers() int {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return len(jm.tms)
}

// JobInfo is a consistent copy of what the JobManager knows about a job.
type JobInfo struct {
	ID, Name       string
	Status         protocol.JobState
	Start, End     time.Time // End is zero while running
	Times          map[protocol.JobState]time.Time
	MaxParallelism int
	Vertices       []VertexInfo
	Failure        *Failure
	Exceptions     []Failure
	Restarts       int
}

// VertexInfo is a vertex with its subtasks' states and summed counters.
type VertexInfo struct {
	ID, Name       string
	Parallelism    int
	MaxParallelism int
	Tasks          []protocol.TaskState
	Stats          protocol.TaskStats
	// Watermarks are each subtask's input and output watermarks
	// (math.MinInt64: none yet, or not running).
	Watermarks [][2]int64
	// Subtasks are each subtask's published counters, nil for a subtask
	// whose execution no TaskManager reports (not deployed yet).
	Subtasks  []*protocol.TaskStats
	Operators []string // node names of the chain
	Inputs    []InputInfo
}

// InputInfo describes a network edge into a vertex.
type InputInfo struct {
	FromVertex string
	Partition  string
	Pattern    string
}

// JobIDs returns the IDs of all jobs in submission order.
func (jm *JobManager) JobIDs() []string {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return append([]string(nil), jm.ids...)
}

// Job returns a copy of a job's state and counters.
func (jm *JobManager) Job(id string) (JobInfo, bool) {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	if !ok {
		jm.mu.Unlock()
		return JobInfo{}, false
	}
	g := j.spec.Graph
	info := JobInfo{ID: id, Name: g.Name, Status: j.state.status, Start: j.started, End: j.ended,
		Times: map[protocol.JobState]time.Time{}, MaxParallelism: g.MaxParallelism, Failure: j.failure,
		Exceptions: append([]Failure(nil), j.exceptions...), Restarts: j.restarts}
	for k, v := range j.times {
		info.Times[k] = v
	}
	tasks := append([]protocol.TaskState(nil), j.state.tasks...)
	tmOf := append([]protocol.TaskManagerGateway(nil), j.tmOf...)
	execs := append([]ExecutionID(nil), j.execs...)
	jm.mu.Unlock()

	k := 0
	for _, v := range g.Vertices {
		vi := VertexInfo{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism}
		for _, n := range v.Nodes {
			vi.Operators = append(vi.Operators, n.Name)
		}
		for _, e := range v.Inputs {
			vi.Inputs = append(vi.Inputs, InputInfo{FromVertex: e.Source.ID, Partition: e.Partition.String(), Pattern: e.Pattern.String()})
		}
		for range v.Parallelism {
			vi.Tasks = append(vi.Tasks, tasks[k])
			wm := [2]int64{math.MinInt64, math.MinInt64}
			var sub *protocol.TaskStats
			if tm := tmOf[k]; tm != nil {
				if s, ok := tm.TaskStats(execs[k]); ok {
					sub = &s
					wm = [2]int64{s.InputWatermark, s.OutputWatermark}
					vi.Stats.RecordsIn += s.RecordsIn
					vi.Stats.RecordsOut += s.RecordsOut
					vi.Stats.BytesIn += s.BytesIn
					vi.Stats.BytesOut += s.BytesOut
					vi.Stats.BackPressuredNanos += s.BackPressuredNanos
					vi.Stats.IdleNanos += s.IdleNanos
					vi.Stats.BusyNanos += s.BusyNanos
				}
			}
			vi.Watermarks = append(vi.Watermarks, wm)
			vi.Subtasks = append(vi.Subtasks, sub)
			k++
		}
		info.Vertices = append(info.Vertices, vi)
	}
	return info, true
}

// coordinator lifecycles -------------------------------------------------

// opCoordinator hosts one operator's coordinator for the current attempt.
type opCoordinator struct {
	jm          *JobManager
	j           *job
	vertex      int
	operatorID  string
	parallelism int
	c           operator.Coordinator
	// closed is set when the coordinator of a later attempt replaced it.
	closed bool
	// stop is closed with it: the CallAsync goroutines end.
	stop chan struct{}
}

// CallAsync implements operator.AsyncCoordinatorContext: fn runs on a
// goroutine of its own, on the job's clock; handler runs under the
// JobManager's lock (where the coordinator's other methods run), unless the
// coordinator was closed or the job is not running (then the result is
// dropped).
func (o *opCoordinator) CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration) {
	if o.closed {
		return
	}
	if o.stop == nil {
		o.stop = make(chan struct{})
	}
	stop, clk := o.stop, o.j.spec.Clock
	go func() {
		d := initialDelay
		for {
			t := clk.NewTimer(max(d, 0))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C():
			}
			select {
			case <-stop: // closed while the timer fired
				return
			default:
			}
			v, err := fn()
			o.jm.mu.Lock()
			if !o.closed && o.j.state.status == protocol.JobRunning {
				if herr := handler(v, err); herr != nil {
					o.jm.failFromCoordinatorLocked(o.j, fmt.Errorf("the coordinator of operator %s: %w", o.operatorID, herr))
				}
			}
			o.jm.mu.Unlock()
			if period <= 0 {
				return
			}
			d = period
		}
	}()
}

// SendEvent implements operator.CoordinatorContext. It is called with the
// JobManager's lock held (coordinators run under it).
func (o *opCoordinator) SendEvent(subtask int, payload []byte) {
	if o.closed {
		return
	}
	i, ok := o.j.index[[2]int{o.vertex, subtask}]
	if !ok || o.j.tmOf[i] == nil {
		return
	}
	o.j.tmOf[i].SendEvent(protocol.OperatorEvent{Exec: o.j.execs[i], OperatorID: o.operatorID, Payload: payload})
}

// Parallelism implements operator.CoordinatorContext.
func (o *opCoordinator) Parallelism() int { return o.parallelism }

// Shared implements operator.CoordinatorContext. Coordinators run with the
// JobManager's lock held, so what they share needs no lock of its own.
func (o *opCoordinator) Shared(key string, create func() any) any {
	v, ok := o.j.shared[key]
	if !ok {
		v = create()
		o.j.shared[key] = v
	}
	return v
}

func (o *opCoordinator) close() {
	if !o.closed {
		o.closed = true
		if o.stop != nil {
			close(o.stop)
		}
		o.c.Close()
	}
}

// startCoordinators (re)creates the operator coordinators of the current
// attempt, restored from the checkpoint it restores, if any.
func (jm *JobManager) startCoordinators(j *job) error {
	for _, c := range j.coords {
		c.close()
	}
	j.coords = map[string]*opCoordinator{}
	j.shared = map[string]any{}
	g := j.spec.Graph
	for vi, v := range g.Vertices {
		for _, n := range v.Nodes {
			f, ok := n.Coordinator.(operator.CoordinatorFactory)
			if !ok {
				continue
			}
			opID := g.OperatorIDs[n.ID]
			var restored []byte
			if j.restore != nil {
				for _, os := range j.restore.Operators {
					if os.OperatorID != opID || os.Coordinator == nil {
						continue
					}
					if os.Coordinator[0] != coordStateV1 {
						return fmt.Errorf("checkpoint %d: the coordinator state of %q has unknown version %d", j.restore.CheckpointID, n.Name, os.Coordinator[0])
					}
					restored = os.Coordinator[1:]
				}
			}
			oc := &opCoordinator{jm: jm, j: j, vertex: vi, operatorID: opID, parallelism: v.Parallelism}
			c, err := f.CreateCoordinator(oc, restored)
			if err != nil {
				return fmt.Errorf("creating the coordinator of %q: %w", n.Name, err)
			}
			oc.c = c
			if err := c.Start(); err != nil {
				return fmt.Errorf("starting the coordinator of %q: %w", n.Name, err)
			}
			j.coords[opID] = oc
		}
	}
	return nil
}

// SendEvent implements protocol.JobManagerGateway: an event from a subtask
// to its operator's coordinator.
func (jm *JobManager) SendEvent(e protocol.OperatorEvent) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, _, ok := jm.execLocked(e.Exec)
	if !ok || j.state.status != protocol.JobRunning {
		return
	}
	oc, ok := j.coords[e.OperatorID]
	if !ok {
		return
	}
	if err := oc.c.HandleEvent(e.Exec.Subtask, e.Payload); err != nil {
		jm.failFromCoordinatorLocked(j, fmt.Errorf("the coordinator of operator %s: %w", e.OperatorID, err))
	}
}

// failFromCoordinatorLocked fails the job (through a restart, if allowed)
// for an error outside any task.
func (jm *JobManager) failFromCoordinatorLocked(j *job, err error) {
	toCancel := j.state.fail(err)
	j.failure = &Failure{Err: err, Time: j.spec.Clock.Now()}
	j.exceptions = append(j.exceptions, *j.failure)
	if j.cp != nil {
		jm.suspendCheckpointsLocked(j)
	}
	cancels := jm.cancelsLocked(j, toCancel)
	jm.afterUpdateLocked(j)
	go func() {
		for _, c := range cancels {
			c()
		}
	}()
}
