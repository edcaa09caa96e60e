package taskmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/internal/task"
)

// Config configures a TaskManager.
type Config struct {
	ID    string
	Slots int
	// NetworkMemory is the most bytes of network buffers its tasks' result
	// partitions may hold at once (Flink's taskmanager.memory.network.max).
	NetworkMemory int64
	// HeapStateMemory bounds the hashmap state backend's tables of all its
	// subtasks together (weir.Config.HeapStateMemory; 0: unbounded).
	HeapStateMemory int64
	// Jobs builds, in this process, each job a RegisterJob message names
	// (required).
	Jobs   JobBuilder
	Logger *slog.Logger
	// Heartbeats are its registration and heartbeats (heartbeat.go).
	Heartbeats Heartbeats
	// Data, if set, carries channels to and from other TaskManager
	// processes (dataplane.go); nil: every channel is local.
	Data *DataPlane
}

// Job is what a TaskManager knows of a job before it runs any of its tasks:
// its graph (every process of a job builds the same one) and the settings
// every task needs. Its JobBuilder makes it from a RegisterJob message.
type Job struct {
	ID    string
	Graph *graph.JobGraph
	Mode  operator.Mode
	// BufferTimeout, BufferSize, BuffersPerChannel and FloatingBuffers size
	// the network (see weir.Config).
	BufferTimeout                                  time.Duration
	BufferSize, BuffersPerChannel, FloatingBuffers int
	Clock                                          clock.Clock
	// StateBackend is the keyed state backend ("hashmap" or "pebble");
	// StateDir the job's working directory for on-disk state.
	StateBackend, StateDir string
	// Checkpoints is nil when the job takes no checkpoints.
	Checkpoints *task.Checkpoints
	// Release, if set, frees what the builder opened for the job; the
	// TaskManager calls it once, when the job has ended and its executions
	// here have returned.
	Release func()
}

// PoolBounds returns the fewest and the most buffers of a result partition
// with n subpartitions. The fewest is one per subpartition: the writer keeps
// a buffer open per channel, and with one more in flight it always makes
// progress. The most is what its receivers may hold (their credit) plus the
// floating buffers that absorb bursts.
func (j *Job) PoolBounds(n int) (fewest, most int) {
	return n, n*j.BuffersPerChannel + j.FloatingBuffers
}

// TaskManager runs executions in a fixed number of slots.
type TaskManager struct {
	id      string
	slots   int
	jm      *silenceable
	shuffle *network.LocalShuffle
	budget  *network.Budget // network memory of all its result partitions
	heapMem *budget.Budget  // its subtasks' heap state tables (nil: unbounded)
	builder JobBuilder
	logger  *slog.Logger
	data    *dataState // nil: no data plane

	mu     sync.Mutex // guards jobs, tasks, early, stores, closed, live and reporting
	closed bool       // Shutdown was called: no more submissions
	jobs   map[string]*Job
	// unbuilt holds why a registered job could not be built here: its
	// deployments fail with it.
	unbuilt map[string]error
	tasks   map[protocol.ExecutionID]*running
	// early holds executions canceled before they were submitted (the
	// JobManager may cancel while it is still deploying), so that a late
	// submission stops at once instead of running unseen.
	early map[protocol.ExecutionID]bool
	// stores caches the checkpoint stores restores read from, by URL.
	stores map[string]*storage.Store
	// errs keeps the Go error of each failed task, for a local caller that
	// wants the user's own error back (the JobManager only gets its text).
	errs map[protocol.ExecutionID]error
	// allocs counts the admitted executions that have not ended, by the
	// allocation (slot) they run in: at most slots allocations at once.
	allocs map[protocol.AllocationID]int
	// attempts is, by job, the newest attempt deployed here and the
	// executions of it admitted so far: an older attempt or an execution
	// admitted before is refused (admitLocked).
	attempts map[string]*attemptSeen
	wg       sync.WaitGroup

	// live are the executions a heartbeat reports, with their counters
	// (submitted and not ended); stop ends the heartbeats at Shutdown.
	live map[protocol.ExecutionID]*running
	stop chan struct{}
	// reportMu is held while a heartbeat or a final report is taken and
	// sent, and taken before mu: an execution's final report is its last
	// (no heartbeat taken before it can arrive after it).
	reportMu sync.Mutex
	// beats drives the heartbeats once Start ran (heartbeat.go), as
	// heartbeats configures them.
	beats      atomic.Pointer[beats]
	heartbeats Heartbeats
}

type running struct {
	task   *task.Task
	alloc  protocol.AllocationID
	cancel chan struct{}
	once   sync.Once
	done   chan struct{} // closed when its goroutine has returned
	// up: the task reported RUNNING (for the heartbeat's state).
	up atomic.Bool
}

// attemptSeen is the newest attempt of a job deployed on a TaskManager and
// its executions admitted so far.
type attemptSeen struct {
	attempt int
	execs   map[protocol.ExecutionID]bool
}

// New returns a TaskManager that reports to gw and exchanges data through shuffle.
func New(cfg Config, gw protocol.JobManagerGateway, shuffle *network.LocalShuffle) *TaskManager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tm := &TaskManager{id: cfg.ID, slots: cfg.Slots, jm: &silenceable{gw: gw}, shuffle: shuffle, budget: network.NewBudget(cfg.NetworkMemory),
		logger: cfg.Logger, builder: cfg.Jobs, jobs: map[string]*Job{}, unbuilt: map[string]error{}, tasks: map[protocol.ExecutionID]*running{},
		early: map[protocol.ExecutionID]bool{}, stores: map[string]*storage.Store{}, errs: map[protocol.ExecutionID]error{},
		live: map[protocol.ExecutionID]*running{}, stop: make(chan struct{}),
		allocs: map[protocol.AllocationID]int{}, attempts: map[string]*attemptSeen{}, heartbeats: cfg.Heartbeats,
		data: newDataState(cfg.Data)}
	if cfg.HeapStateMemory > 0 {
		tm.heapMem = budget.New(cfg.HeapStateMemory)
	}
	return tm
}

// ID is the TaskManager's name.
func (tm *TaskManager) ID() string { return tm.id }

// Registration is what the TaskManager tells the JobManager it registers
// with: its name, slots, network memory and data address.
func (tm *TaskManager) Registration() protocol.TaskManagerRegistration {
	r := protocol.TaskManagerRegistration{ID: tm.id, Slots: tm.slots, NetworkMemory: tm.budget.Capacity()}
	if tm.data != nil {
		r.DataAddress = tm.data.cfg.Address
	}
	return r
}

// SubmitTask implements protocol.TaskManagerGateway. An execution that
// cannot start is reported FAILED. A deployment refused by admitLocked is
// logged, and reported FAILED unless it duplicates one admitted before
// (that report would fail the execution already running).
func (tm *TaskManager) SubmitTask(d protocol.Deployment) {
	tm.mu.Lock()
	refusal, report := tm.admitLocked(d)
	tm.mu.Unlock()
	err := refusal
	if refusal != nil {
		tm.logger.Warn("deployment refused", "taskmanager", tm.id, "exec", d.Exec.String(), "allocation", d.Allocation.String(), "reason", refusal)
	} else if err = tm.submit(d); err != nil {
		tm.mu.Lock()
		tm.releaseLocked(d.Allocation)
		tm.mu.Unlock()
		report = true
	}
	if err != nil && report {
		tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskFailed,
			Failure: &protocol.Failure{Message: fmt.Sprintf("deploying %s: %v", d.Exec, err), Permanent: failure.IsPermanent(err)}})
	}
}

// admitLocked decides whether deployment d may run here (decision 14 of
// docs/distributed-runtime.md): its allocation must be its execution's,
// its attempt no older than the newest of the job deployed here, the
// execution not admitted before, and its allocation held already or a slot
// free. Late and duplicate deployments are so harmless. An admitted
// deployment holds its allocation until it ends (releaseLocked). It
// returns why d is refused (nil: admitted) and whether to report the
// refusal as the execution's failure.
func (tm *TaskManager) admitLocked(d protocol.Deployment) (refusal error, report bool) {
	e, a := d.Exec, d.Allocation
	if a.Job != e.Job || a.Attempt != e.Attempt {
		return fmt.Errorf("taskmanager %s: %s does not belong to the execution's job and attempt", tm.id, a), true
	}
	seen := tm.attempts[e.Job]
	switch {
	case seen != nil && e.Attempt < seen.attempt:
		return fmt.Errorf("taskmanager %s: attempt %d of job %s is stale: attempt %d was deployed here since", tm.id, e.Attempt, e.Job, seen.attempt), true
	case seen != nil && e.Attempt == seen.attempt && seen.execs[e]:
		return fmt.Errorf("taskmanager %s: %s was deployed here before (%s): a duplicate", tm.id, e, a), false
	}
	if tm.allocs[a] == 0 && len(tm.allocs) >= tm.slots {
		held := make([]string, 0, len(tm.allocs))
		for h := range tm.allocs {
			held = append(held, h.String())
		}
		slices.Sort(held)
		return fmt.Errorf("taskmanager %s: no free slot for %s: its %d slots hold %s", tm.id, a, tm.slots, strings.Join(held, ", ")), true
	}
	if seen == nil || e.Attempt > seen.attempt {
		seen = &attemptSeen{attempt: e.Attempt, execs: map[protocol.ExecutionID]bool{}}
		tm.attempts[e.Job] = seen
	}
	seen.execs[e] = true
	tm.allocs[a]++
	return nil, false
}

// releaseLocked frees an admitted execution's hold on its allocation.
func (tm *TaskManager) releaseLocked(a protocol.AllocationID) {
	if tm.allocs[a]--; tm.allocs[a] <= 0 {
		delete(tm.allocs, a)
	}
}

func (tm *TaskManager) submit(d protocol.Deployment) error {
	tm.mu.Lock()
	job, unbuilt := tm.jobs[d.Exec.Job], tm.unbuilt[d.Exec.Job]
	tm.mu.Unlock()
	if unbuilt != nil {
		return unbuilt
	}
	if job == nil {
		return fmt.Errorf("taskmanager %s: job %s is not registered", tm.id, d.Exec.Job)
	}
	spec, w, err := tm.taskSpec(job, d)
	if err != nil {
		w.close()
		return err
	}
	var r *running
	spec.Running = func() {
		r.up.Store(true)
		tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskRunning})
	}
	r = &running{task: task.New(spec), alloc: d.Allocation, cancel: make(chan struct{}), done: make(chan struct{})}
	w.bind(r.task)
	tm.mu.Lock()
	if tm.closed {
		tm.mu.Unlock()
		w.close()
		return fmt.Errorf("taskmanager %s is shut down", tm.id)
	}
	if _, dup := tm.tasks[d.Exec]; dup {
		tm.mu.Unlock()
		w.close()
		return fmt.Errorf("taskmanager %s: %s is already running", tm.id, d.Exec)
	}
	tm.tasks[d.Exec] = r
	if tm.early[d.Exec] {
		delete(tm.early, d.Exec)
		close(r.cancel)
		r.once.Do(func() {})
	}
	tm.wg.Add(1) // under mu, so Shutdown's Wait sees it
	tm.live[d.Exec] = r
	tm.mu.Unlock()
	go func() {
		defer tm.wg.Done()
		defer close(r.done)
		tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskInitializing})
		err := w.run(r.task, r.cancel)
		w.close()
		tm.reportFinal(d.Exec, r)
		switch {
		case err == nil:
			tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskFinished})
		case errors.Is(err, task.ErrCanceled):
			tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskCanceled})
		default:
			tm.logger.Info("task failed", "task", r.task.Name(), "err", err)
			tm.mu.Lock()
			if len(tm.errs) < maxKeptErrors {
				tm.errs[d.Exec] = err
			}
			tm.mu.Unlock()
			tm.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskFailed, Failure: failureOf(err)})
		}
	}()
	return nil
}

// maxKeptErrors bounds the task errors kept for local callers.
const maxKeptErrors = 1024

// TaskError returns the error a failed task returned, for callers in the
// same process (nil if unknown).
func (tm *TaskManager) TaskError(e protocol.ExecutionID) error {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.errs[e]
}

// failureOf turns a task's error into the plain failure message.
func failureOf(err error) *protocol.Failure {
	f := &protocol.Failure{Message: err.Error(), Permanent: failure.IsPermanent(err)}
	var te *task.Error
	if errors.As(err, &te) {
		f.Operator, f.Task, f.Stack = te.Operator, te.Task, te.Stack
	}
	return f
}

// taskSpec wires one execution's outputs and inputs; its remote channels
// are w's (to close, also after an error).
func (tm *TaskManager) taskSpec(job *Job, d protocol.Deployment) (_ task.Spec, w *wiring, _ error) {
	w = &wiring{}
	g := job.Graph
	if d.Exec.Vertex < 0 || d.Exec.Vertex >= len(g.Vertices) {
		return task.Spec{}, w, fmt.Errorf("taskmanager %s: job %s has no vertex %d", tm.id, d.Exec.Job, d.Exec.Vertex)
	}
	v := g.Vertices[d.Exec.Vertex]
	keyHash := keygroup.HashVersion(d.KeyHash)
	if !keyHash.Valid() {
		return task.Spec{}, w, fmt.Errorf("taskmanager %s: %s: key hash version %d is unknown to this build", tm.id, d.Exec, d.KeyHash)
	}
	place, err := tm.placement(job, d)
	if err != nil {
		return task.Spec{}, w, err
	}
	spec := task.Spec{
		Exec: d.Exec, Vertex: v, OperatorIDs: g.OperatorIDs, MaxParallelism: v.MaxParallelism, KeyHash: keyHash, Mode: job.Mode, Clock: job.Clock,
		BufferTimeout: job.BufferTimeout, Logger: tm.logger, StateBackend: job.StateBackend, StateDir: job.StateDir,
		HeapMemory: tm.heapMem, Checkpoints: job.Checkpoints, Restore: d.Restore, Reporter: reporter{tm.jm},
	}
	if d.Restore != nil {
		st, err := tm.store(d.Restore.StorageURL)
		if err != nil {
			return task.Spec{}, w, err
		}
		spec.RestoreStore = st
	}
	key := func(e *graph.JobEdge, producer int) network.PartitionKey {
		return network.PartitionKey{Job: d.Exec.Job, Edge: e.Index, Producer: producer, Attempt: d.Exec.Attempt}
	}
	for _, e := range v.Outputs {
		lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, d.Exec.Subtask)
		n := hi - lo
		fewest, most := job.PoolBounds(n)
		pool, err := tm.budget.NewPool(fewest, most, job.BufferSize)
		if err != nil {
			return task.Spec{}, w, fmt.Errorf("taskmanager %s: the output of %q to %q: %w (taskmanager.memory.network.max)", tm.id, v.Name, e.Target.Name, err)
		}
		rp, err := tm.shuffle.Produce(key(e, d.Exec.Subtask), n, pool)
		if err != nil {
			pool.Close()
			return task.Spec{}, w, err
		}
		if err := tm.publish(w, place, e, key(e, d.Exec.Subtask), rp); err != nil {
			return task.Spec{}, w, err
		}
		spec.Outputs = append(spec.Outputs, task.Output{Edge: e, Partition: rp})
	}
	if len(v.Inputs) > 0 {
		spec.Gate = network.NewInputGate()
		spec.ChannelsPerInput = make([]int, v.NumInputs)
		for _, e := range v.Inputs {
			plo, phi := graph.Sources(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, d.Exec.Subtask)
			for producer := plo; producer < phi; producer++ {
				lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, producer)
				sub := d.Exec.Subtask - lo
				ch := spec.ChannelsPerInput[e.Input]
				if err := tm.connect(w, job, place, e, key(e, producer), hi-lo, sub, spec.Gate, e.Input, ch); err != nil {
					return task.Spec{}, w, err
				}
				spec.ChannelsPerInput[e.Input]++
			}
		}
	}
	return spec, w, nil
}

// store returns the checkpoint store at url, opening it once.
func (tm *TaskManager) store(url string) (*storage.Store, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if s, ok := tm.stores[url]; ok {
		return s, nil
	}
	s, err := storage.Open(context.Background(), url)
	if err != nil {
		return nil, fmt.Errorf("taskmanager %s: opening the checkpoint storage to restore from: %w", tm.id, err)
	}
	tm.stores[url] = s
	return s, nil
}

// reporter forwards a task's messages to the JobManager.
type reporter struct{ jm protocol.JobManagerGateway }

func (r reporter) Acknowledge(a protocol.AcknowledgeCheckpoint) { r.jm.AcknowledgeCheckpoint(a) }
func (r reporter) Decline(d protocol.DeclineCheckpoint)         { r.jm.DeclineCheckpoint(d) }
func (r reporter) SendEvent(e protocol.OperatorEvent)           { r.jm.SendEvent(e) }
func (r reporter) SourceEnded(s protocol.SourceEnded)           { r.jm.SourceEnded(s) }

func (tm *TaskManager) running(e protocol.ExecutionID) *running {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.tasks[e]
}

// CancelTask implements protocol.TaskManagerGateway.
func (tm *TaskManager) CancelTask(e protocol.ExecutionID) {
	tm.mu.Lock()
	r, ok := tm.tasks[e]
	if !ok {
		tm.early[e] = true
	}
	tm.mu.Unlock()
	if ok {
		r.once.Do(func() { close(r.cancel) })
	}
}

// TriggerCheckpoint implements protocol.TaskManagerGateway.
func (tm *TaskManager) TriggerCheckpoint(tc protocol.TriggerCheckpoint) {
	if r := tm.running(tc.Exec); r != nil {
		r.task.TriggerCheckpoint(tc)
		return
	}
	go tm.jm.DeclineCheckpoint(protocol.DeclineCheckpoint{Exec: tc.Exec, ID: tc.ID, Reason: "the task is not running"})
}

// NotifyCheckpoint implements protocol.TaskManagerGateway.
func (tm *TaskManager) NotifyCheckpoint(n protocol.NotifyCheckpoint) {
	if r := tm.running(n.Exec); r != nil {
		r.task.NotifyCheckpoint(n)
	}
}

// SendEvent implements protocol.TaskManagerGateway.
func (tm *TaskManager) SendEvent(e protocol.OperatorEvent) {
	if r := tm.running(e.Exec); r != nil {
		r.task.DeliverEvent(e.OperatorID, e.Payload)
	}
}

// reportFinal reports the counters an execution ended with, before its
// terminal state: the last report of it.
func (tm *TaskManager) reportFinal(e protocol.ExecutionID, r *running) {
	tm.reportMu.Lock()
	defer tm.reportMu.Unlock()
	tm.mu.Lock()
	delete(tm.live, e)
	tm.releaseLocked(r.alloc) // before the terminal state: the JobManager may reuse the slot then
	tm.mu.Unlock()
	tm.jm.ReportTaskStats(protocol.TaskStatsReport{TaskManager: tm.id, Tasks: []protocol.ExecutionStats{{Exec: e, Stats: statsOf(r.task)}}})
}

// statsOf returns a task's last published counters.
func statsOf(t *task.Task) protocol.TaskStats {
	s := t.Stats.Snapshot()
	ms := t.Stats.Metrics.Snapshot()
	ops := make([]protocol.OperatorMetric, len(ms))
	for i, m := range ms {
		ops[i] = protocol.OperatorMetric{Operator: m.Operator, Name: m.Name, Value: m.Value}
	}
	return protocol.TaskStats{RecordsIn: s.RecordsIn, RecordsOut: s.RecordsOut, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
		BackPressuredNanos: s.BackPressuredNanos, IdleNanos: s.IdleNanos, BusyNanos: s.BusyNanos,
		InputWatermark: s.InputWatermark, OutputWatermark: s.OutputWatermark, OutputIdle: s.OutputIdle, Operators: ops}
}

// Crash stops the TaskManager as a crashed process stops: from now on it
// sends the JobManager nothing, then it cancels every task and waits for
// them. The embedded cluster uses it to lose a TaskManager
// (cluster.Local.CrashTaskManager).
func (tm *TaskManager) Crash() {
	tm.jm.off.Store(true)
	tm.Shutdown()
}

// silenceable is the TaskManager's JobManager gateway, which Crash turns
// off: one atomic load per message, never per record.
type silenceable struct {
	gw  protocol.JobManagerGateway
	off atomic.Bool
}

func (s *silenceable) UpdateTaskState(u protocol.TaskStateUpdate) {
	if !s.off.Load() {
		s.gw.UpdateTaskState(u)
	}
}

func (s *silenceable) AcknowledgeCheckpoint(a protocol.AcknowledgeCheckpoint) {
	if !s.off.Load() {
		s.gw.AcknowledgeCheckpoint(a)
	}
}

func (s *silenceable) DeclineCheckpoint(d protocol.DeclineCheckpoint) {
	if !s.off.Load() {
		s.gw.DeclineCheckpoint(d)
	}
}

func (s *silenceable) SendEvent(e protocol.OperatorEvent) {
	if !s.off.Load() {
		s.gw.SendEvent(e)
	}
}

func (s *silenceable) SourceEnded(e protocol.SourceEnded) {
	if !s.off.Load() {
		s.gw.SourceEnded(e)
	}
}

func (s *silenceable) ReportTaskStats(r protocol.TaskStatsReport) {
	if !s.off.Load() {
		s.gw.ReportTaskStats(r)
	}
}

// Shutdown cancels every running task, waits for all of them to return,
// and releases every job it still knows (Job.Release).
func (tm *TaskManager) Shutdown() {
	tm.mu.Lock()
	if !tm.closed {
		close(tm.stop)
	}
	tm.closed = true
	for _, r := range tm.tasks {
		r.once.Do(func() { close(r.cancel) })
	}
	stores := tm.stores
	tm.stores = map[string]*storage.Store{}
	jobs := tm.jobs
	tm.jobs = map[string]*Job{}
	tm.mu.Unlock()
	tm.wg.Wait()
	tm.closeData()
	for _, s := range stores {
		s.Close()
	}
	for _, j := range jobs {
		if j.Release != nil {
			j.Release()
		}
	}
}
