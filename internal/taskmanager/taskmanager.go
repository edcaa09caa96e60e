package taskmanager

import (
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/rest"
	"log/slog"
	"sync"

	"github.com/weirhq/weir/internal/graph"
	jm "github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/task"
)

// TaskManager runs executions in a fixed number of slots.
type TaskManager struct {
	id      string
	slots   int
	jm      jm.JobManagerGateway
	shuffle *network.LocalShuffle
	budget  *network.Budget // network memory of all its result partitions
	logger  *slog.Logger

	mu     sync.Mutex // guards tasks, early and closed
	closed bool       // Shutdown was called: no more submissions
	tasks  map[jm.ExecutionID]*running
	// early holds executions canceled before they were submitted (the
	// JobManager may cancel while it is still deploying), so that a late
	// submission stops at once instead of running unseen.
	early map[jm.ExecutionID]bool
	wg    sync.WaitGroup
}

type running struct {
	task   *task.Task
	cancel chan struct{}
	once   sync.Once
}

// Config configures a TaskManager.
type Config struct {
	ID    string
	Slots int
	// NetworkMemory is the most bytes of network buffers its tasks' result
	// partitions may hold at once (Flink's taskmanager.memory.network.max).
	NetworkMemory int64
	Logger        *slog.Logger
}

// New returns a TaskManager that reports to gw and exchanges data through shuffle.
func New(cfg Config, gw jm.JobManagerGateway, shuffle *network.LocalShuffle) *TaskManager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &TaskManager{id: cfg.ID, slots: cfg.Slots, jm: gw, shuffle: shuffle, budget: network.NewBudget(cfg.NetworkMemory),
		logger: cfg.Logger, tasks: map[jm.ExecutionID]*running{}, early: map[jm.ExecutionID]bool{}}
}

// NetworkMemory implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) NetworkMemory() (capacity, free int64) {
	return tm.budget.Capacity(), tm.budget.Capacity() - tm.budget.Used()
}

// ID implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) ID() string { return tm.id }

// NumSlots implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) NumSlots() int { return tm.slots }

// SubmitTask implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) SubmitTask(d jm.Deployment) error {
	spec, err := tm.taskSpec(d)
	if err != nil {
		return err
	}
	r := &running{task: task.New(spec), cancel: make(chan struct{})}
	tm.mu.Lock()
	if tm.closed {
		tm.mu.Unlock()
		return fmt.Errorf("taskmanager %s is shut down", tm.id)
	}
	if _, dup := tm.tasks[d.Exec]; dup {
		tm.mu.Unlock()
		return fmt.Errorf("taskmanager %s: %s is already running", tm.id, d.Exec)
	}
	tm.tasks[d.Exec] = r
	if tm.early[d.Exec] {
		delete(tm.early, d.Exec)
		close(r.cancel)
		r.once.Do(func() {})
	}
	tm.wg.Add(1) // under mu, so Shutdown's Wait sees it
	tm.mu.Unlock()
	go func() {
		defer tm.wg.Done()
		tm.jm.UpdateTaskState(d.Exec, rest.TaskRunning, nil)
		err := r.task.Run(r.cancel)
		switch {
		case err == nil:
			tm.jm.UpdateTaskState(d.Exec, rest.TaskFinished, nil)
		case errors.Is(err, task.ErrCanceled):
			tm.jm.UpdateTaskState(d.Exec, rest.TaskCanceled, nil)
		default:
			tm.logger.Info("task failed", "task", r.task.Name(), "err", err)
			tm.jm.UpdateTaskState(d.Exec, rest.TaskFailed, err)
		}
	}()
	return nil
}

// taskSpec wires one execution's outputs and inputs.
func (tm *TaskManager) taskSpec(d jm.Deployment) (task.Spec, error) {
	g := d.Job.Graph
	v := g.Vertices[d.Exec.Vertex]
	cfg := d.Job.Config
	spec := task.Spec{
		Vertex: v, OperatorIDs: g.OperatorIDs, Subtask: d.Exec.Subtask, Attempt: d.Exec.Attempt,
		MaxParallelism: v.MaxParallelism, Mode: cfg.Mode, Clock: cfg.Clock, BufferTimeout: cfg.BufferTimeout,
		Logger: tm.logger, StateBackend: cfg.StateBackend, StateDir: cfg.StateDir,
	}
	key := func(e *graph.JobEdge, producer int) network.PartitionKey {
		return network.PartitionKey{Job: d.Job.ID, Edge: e.Index, Producer: producer, Attempt: d.Exec.Attempt}
	}
	for _, e := range v.Outputs {
		lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, d.Exec.Subtask)
		n := hi - lo
		fewest, most := cfg.PoolBounds(n)
		pool, err := tm.budget.NewPool(fewest, most, cfg.BufferSize)
		if err != nil {
			return task.Spec{}, fmt.Errorf("taskmanager %s: the output of %q to %q: %w (taskmanager.memory.network.max)", tm.id, v.Name, e.Target.Name, err)
		}
		rp, err := tm.shuffle.Produce(key(e, d.Exec.Subtask), n, pool)
		if err != nil {
			pool.Close()
			return task.Spec{}, err
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
				rp, err := tm.shuffle.Consume(key(e, producer), hi-lo)
				if err != nil {
					return task.Spec{}, err
				}
				sub := d.Exec.Subtask - lo
				ch := spec.ChannelsPerInput[e.Input]
				network.Connect(rp.Subs[sub], spec.Gate, e.Input, ch, cfg.BuffersPerChannel)
				spec.ChannelsPerInput[e.Input]++
			}
		}
	}
	return spec, nil
}

// CancelTask implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) CancelTask(e jm.ExecutionID) {
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

// TaskStats implements jobmanager.TaskManagerGateway.
func (tm *TaskManager) TaskStats(e jm.ExecutionID) (operator.StatsSnapshot, bool) {
	tm.mu.Lock()
	r, ok := tm.tasks[e]
	tm.mu.Unlock()
	if !ok {
		return operator.StatsSnapshot{}, false
	}
	return r.task.Stats.Snapshot(), true
}

// ReleaseJob implements jobmanager.TaskManagerGateway. Counters of the job's
// tasks stay readable until the TaskManager shuts down.
func (tm *TaskManager) ReleaseJob(jobID string) { tm.shuffle.Release(jobID) }

// Shutdown cancels every running task and waits for all of them to return.
func (tm *TaskManager) Shutdown() {
	tm.mu.Lock()
	tm.closed = true
	for _, r := range tm.tasks {
		r.once.Do(func() { close(r.cancel) })
	}
	tm.mu.Unlock()
	tm.wg.Wait()
}
