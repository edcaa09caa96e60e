package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/rest"
	"log/slog"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
)

// ErrJobNotFound is returned for an unknown job ID.
var ErrJobNotFound = errors.New("job not found")

// JobManager schedules jobs onto the slots of its TaskManagers.
type JobManager struct {
	logger *slog.Logger

	mu   sync.Mutex // guards everything below
	tms  []TaskManagerGateway
	free []int // free slots per TaskManager, parallel to tms
	jobs map[string]*job
	ids  []string // submission order
}

// job is the JobManager's record of one job.
type job struct {
	spec  *JobSpec
	state *jobState
	execs []ExecutionID
	index map[ExecutionID]int
	tmOf  []TaskManagerGateway
	// deployed[i] is set before execution i is submitted; executions not
	// deployed are never sent a cancel (the deploy loop reports them).
	deployed []bool
	slots    map[int]int // TaskManager index -> slots held
	times    map[rest.JobState]time.Time
	started  time.Time
	ended    time.Time
	failure  *Failure
	done     chan struct{}
}

// Failure is the root cause of a failed job.
type Failure struct {
	Err      error
	TaskName string // "" when not caused by a task
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
func (jm *JobManager) RegisterTaskManager(tm TaskManagerGateway) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.tms = append(jm.tms, tm)
	jm.free = append(jm.free, tm.NumSlots())
}

// Submit schedules a job and deploys its tasks. Slot sharing puts subtask i
// of every vertex into the job's i-th slot, so a job needs as many slots as
// its largest parallelism.
func (jm *JobManager) Submit(spec *JobSpec) error {
	jm.mu.Lock()
	if _, dup := jm.jobs[spec.ID]; dup {
		jm.mu.Unlock()
		return fmt.Errorf("jobmanager: job %s was already submitted", spec.ID)
	}
	g := spec.Graph
	need := 0
	for _, v := range g.Vertices {
		need = max(need, v.Parallelism)
	}
	j := &job{spec: spec, index: map[ExecutionID]int{}, slots: map[int]int{},
		times: map[rest.JobState]time.Time{rest.JobCreated: time.Now()}, started: time.Now(), done: make(chan struct{})}
	for vi, v := range g.Vertices {
		for s := range v.Parallelism {
			e := ExecutionID{Job: spec.ID, Vertex: vi, Subtask: s}
			j.index[e] = len(j.execs)
			j.execs = append(j.execs, e)
		}
	}
	j.state = newJobState(len(j.execs))
	j.tmOf = make([]TaskManagerGateway, len(j.execs))
	jm.jobs[spec.ID] = j
	jm.ids = append(jm.ids, spec.ID)

	// Allocate shared slots: slot s lives on TaskManager slotTM[s].
	slotTM := make([]int, 0, need)
	total := 0
	for ti := range jm.tms {
		total += jm.free[ti]
		for range jm.free[ti] {
			if len(slotTM) < need {
				slotTM = append(slotTM, ti)
			}
		}
	}
	if len(slotTM) < need {
		err := fmt.Errorf("not enough task slots: the job needs %d (its largest parallelism), the cluster has %d free", need, total)
		jm.failLocked(j, err)
		jm.mu.Unlock()
		return err
	}
	if err := jm.checkNetworkMemory(spec, slotTM); err != nil {
		jm.failLocked(j, err)
		jm.mu.Unlock()
		return err
	}
	for _, ti := range slotTM {
		jm.free[ti]--
		j.slots[ti]++
	}
	var deps []Deployment
	for i, e := range j.execs {
		tm := jm.tms[slotTM[e.Subtask]]
		j.tmOf[i] = tm
		j.state.tasks[i] = rest.TaskDeploying
		deps = append(deps, Deployment{Exec: e, Job: spec, Slot: e.Subtask})
	}
	j.deployed = make([]bool, len(deps))
	j.state.start()
	j.times[rest.JobRunning] = time.Now()
	jm.mu.Unlock()

	jm.logger.Info("job submitted", "job", spec.ID, "name", g.Name, "tasks", len(deps))
	go jm.deploy(j, deps)
	return nil
}

// deploy submits a job's executions one by one. It stops as soon as the job
// is canceled or fails (a task failed, or a deployment did), and reports the
// executions it did not deploy as canceled, so a cancel takes effect at once
// even while thousands of tasks are being deployed.
func (jm *JobManager) deploy(j *job, deps []Deployment) {
	for i, d := range deps {
		jm.mu.Lock()
		if j.state.status != rest.JobRunning {
			for k := i; k < len(deps); k++ {
				j.state.update(k, rest.TaskCanceled, nil)
			}
			if j.state.status.Terminal() {
				jm.finishLocked(j)
			}
			jm.mu.Unlock()
			return
		}
		j.deployed[i] = true
		jm.mu.Unlock()
		if err := j.tmOf[i].SubmitTask(d); err != nil {
			jm.UpdateTaskState(d.Exec, rest.TaskFailed, fmt.Errorf("deploying %s: %w", d.Exec, err))
		}
	}
}

// checkNetworkMemory fails a job whose result partitions' minimum buffers do
// not fit the network memory of the TaskManagers it is placed on, before
// anything is deployed, with a message that says what to change.
func (jm *JobManager) checkNetworkMemory(spec *JobSpec, slotTM []int) error {
	need, channels := networkNeeds(spec.Graph, spec.Config, slotTM, len(jm.tms))
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
			network.FormatBytes(n), jm.tms[ti].ID(), network.FormatBytes(int64(spec.Config.BufferSize)), channels[ti], have)
	}
	return nil
}

// networkNeeds returns, per TaskManager, the bytes of buffers that the result
// partitions of the subtasks placed on it need at least (slot s is on
// TaskManager slotTM[s]; subtask s of every vertex runs in slot s), and their
// number of output channels.
func networkNeeds(g *graph.JobGraph, cfg RuntimeConfig, slotTM []int, tms int) (bytes []int64, channels []int64) {
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

// failLocked fails a job that could not be scheduled.
func (jm *JobManager) failLocked(j *job, err error) {
	j.failure = &Failure{Err: err, Time: time.Now()}
	for _, i := range j.state.fail(err) {
		j.state.update(i, rest.TaskCanceled, nil) // nothing was deployed
	}
	jm.finishLocked(j)
}

// UpdateTaskState implements JobManagerGateway.
func (jm *JobManager) UpdateTaskState(e ExecutionID, st rest.TaskState, err error) {
	jm.mu.Lock()
	j, ok := jm.jobs[e.Job]
	if !ok {
		jm.mu.Unlock()
		return
	}
	i, ok := j.index[e]
	if !ok {
		jm.mu.Unlock()
		return
	}
	wasFailing := j.state.status == rest.JobFailing
	toCancel := j.state.update(i, st, err)
	if st == rest.TaskFailed && !wasFailing && j.state.failedAt == i {
		name := fmt.Sprintf("%s (%d/%d)", j.spec.Graph.Vertices[e.Vertex].Name, e.Subtask+1, j.spec.Graph.Vertices[e.Vertex].Parallelism)
		j.failure = &Failure{Err: err, TaskName: name, Time: time.Now()}
		jm.logger.Info("task failed; failing the job", "job", e.Job, "task", name, "err", err)
	}
	cancels := jm.cancelsLocked(j, toCancel)
	if j.state.status.Terminal() {
		jm.finishLocked(j)
	}
	jm.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// cancelsLocked returns the calls that cancel the deployed executions among
// toCancel, to be made after the lock is released.
func (jm *JobManager) cancelsLocked(j *job, toCancel []int) []func() {
	cancels := make([]func(), 0, len(toCancel))
	for _, k := range toCancel {
		if !j.deployed[k] {
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
	j.ended = time.Now()
	j.times[j.state.status] = j.ended
	for ti, n := range j.slots {
		jm.free[ti] += n
	}
	j.slots = nil
	for _, tm := range jm.tms {
		tm.ReleaseJob(j.spec.ID)
	}
	close(j.done)
	jm.logger.Info("job ended", "job", j.spec.ID, "status", j.state.status)
}

// Cancel cancels a running job. Canceling a job that already ended is not an error.
func (jm *JobManager) Cancel(id string) error {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	if !ok {
		jm.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	toCancel := j.state.cancel()
	if len(toCancel) > 0 {
		j.times[rest.JobCancelling] = time.Now()
	}
	cancels := jm.cancelsLocked(j, toCancel)
	jm.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	return nil
}

// Wait blocks until the job ends or ctx is done, and returns its final state
// and, for a failed job, its root cause.
func (jm *JobManager) Wait(ctx context.Context, id string) (rest.JobState, error) {
	jm.mu.Lock()
	j, ok := jm.jobs[id]
	jm.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j.state.status == rest.JobFailed && j.failure != nil {
		return j.state.status, j.failure.Err
	}
	return j.state.status, nil
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
	Status         rest.JobState
	Start, End     time.Time // End is zero while running
	Times          map[rest.JobState]time.Time
	MaxParallelism int
	Vertices       []VertexInfo
	Failure        *Failure
}

// VertexInfo is a vertex with its subtasks' states and summed counters.
type VertexInfo struct {
	ID, Name       string
	Parallelism    int
	MaxParallelism int
	Tasks          []rest.TaskState
	Stats          operator.StatsSnapshot
	Operators      []string // node names of the chain
	Inputs         []InputInfo
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
		Times: map[rest.JobState]time.Time{}, MaxParallelism: g.MaxParallelism, Failure: j.failure}
	for k, v := range j.times {
		info.Times[k] = v
	}
	tasks := append([]rest.TaskState(nil), j.state.tasks...)
	tmOf := append([]TaskManagerGateway(nil), j.tmOf...)
	execs := j.execs
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
			if tm := tmOf[k]; tm != nil {
				if s, ok := tm.TaskStats(execs[k]); ok {
					vi.Stats.RecordsIn += s.RecordsIn
					vi.Stats.RecordsOut += s.RecordsOut
					vi.Stats.BytesIn += s.BytesIn
					vi.Stats.BytesOut += s.BytesOut
					vi.Stats.BackPressuredNanos += s.BackPressuredNanos
					vi.Stats.IdleNanos += s.IdleNanos
					vi.Stats.BusyNanos += s.BusyNanos
				}
			}
			k++
		}
		info.Vertices = append(info.Vertices, vi)
	}
	return info, true
}
