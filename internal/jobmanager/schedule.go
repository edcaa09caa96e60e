package jobmanager

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/memory"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// Submit schedules a job and starts deploying its tasks. Slot sharing puts
// subtask i of every vertex into the job's i-th slot, so a job needs as
// many slots as its largest parallelism. It returns once the job is
// accepted; deployment goes on in the background.
func (jm *JobManager) Submit(spec *JobSpec) error {
	if spec.Clock == nil {
		spec.Clock = clock.System{}
	}
	jm.mu.Lock()
	old := jm.jobs[spec.ID]
	jm.mu.Unlock()
	if old != nil && !old.over() {
		return fmt.Errorf("jobmanager: job %s was already submitted", spec.ID)
	}
	if old != nil {
		// A run of the same job that ended (reactive mode runs a job
		// again under its id at another parallelism): its record gives
		// way once its I/O is done.
		old.io.Wait()
	}
	if spec.Checkpoints != nil && spec.Checkpoints.Store != nil {
		jm.writeJobInfo(spec) // I/O: outside the lock
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if cur := jm.jobs[spec.ID]; cur != nil && cur != old {
		return fmt.Errorf("jobmanager: job %s was already submitted", spec.ID)
	}
	if old != nil {
		delete(jm.jobs, spec.ID)
		jm.ids = slices.DeleteFunc(jm.ids, func(id string) bool { return id == spec.ID })
	}
	g := spec.Graph
	need := 0
	for _, v := range g.Vertices {
		need = max(need, v.Parallelism)
	}
	now := spec.Clock.Now()
	j := &job{spec: spec, index: map[[2]int]int{}, need: need,
		times: map[protocol.JobState]time.Time{protocol.JobCreated: now}, started: now, done: make(chan struct{}),
		strategy: restart.New(spec.Restart, rand.Float64), restore: spec.Restore, restoreStore: spec.RestoreStore}
	for vi, v := range g.Vertices {
		for s := range v.Parallelism {
			j.index[[2]int{vi, s}] = len(j.execs)
			j.execs = append(j.execs, ExecutionID{Job: spec.ID, Vertex: vi, Subtask: s})
		}
	}
	j.state = newJobState(len(j.execs))
	j.tmOf = make([]*taskManager, len(j.execs))
	j.stats = make([]*protocol.TaskStats, len(j.execs))
	jm.jobs[spec.ID] = j
	jm.ids = append(jm.ids, spec.ID)
	spec.Register.JobID, spec.Register.Name = spec.ID, spec.Name
	for _, tm := range jm.tms {
		tm.send(spec.Register) // ahead of any deployment there
	}

	// The first attempt's slots, when there are enough now: a job whose
	// network memory cannot fit is refused before anything starts. With too
	// few, the attempt waits for them (scheduleLocked).
	if slotTM, _ := jm.pickSlotsLocked(need); slotTM != nil {
		if _, err := jm.checkNetworkMemory(spec, slotTM); err != nil {
			jm.failLocked(j, err)
			return err
		}
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
	j.state.start()
	j.times[protocol.JobRunning] = spec.Clock.Now()
	jm.logger.Info("job submitted", "job", spec.ID, "name", g.Name, "tasks", len(j.execs))
	if cs := spec.Checkpoints; cs != nil && cs.ContinueLineage {
		j.io.Add(1)
		go jm.cleanLineage(j)
	}
	if err := jm.scheduleLocked(j, plan); err != nil {
		jm.failLocked(j, err)
		return err
	}
	return nil
}

// deployLocked submits the current attempt's executions, in the background,
// to the TaskManagers its slots are allocated on (j.slotTM).
func (jm *JobManager) deployLocked(j *job, plan map[ExecutionID]*protocol.TaskRestore) {
	deps := make([]protocol.Deployment, len(j.execs))
	for i, e := range j.execs {
		j.tmOf[i] = j.slotTM[e.Subtask]
		j.state.tasks[i] = protocol.TaskDeploying
		deps[i] = protocol.Deployment{Exec: e, Slot: e.Subtask, Allocation: jm.allocation(j, e.Subtask), KeyHash: uint8(j.keyHash), Restore: plan[e]}
	}
	j.deployed = make([]bool, len(deps))
	jm.placeAttemptLocked(j)
	go jm.deploy(j, j.attempt, deps)
}

// deploy submits a job's executions one by one, each once the one before
// was delivered. It stops as soon as the job is canceled or fails (a task
// failed, or a deployment did: the TaskManager reports it FAILED), and
// reports the executions it did not deploy as canceled, so a cancel takes
// effect at once even while thousands of tasks are being deployed.
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
		sent := make(chan struct{})
		j.tmOf[i].sendNotify(d, sent)
		jm.mu.Unlock()
		<-sent
	}
}

// checkNetworkMemory fails a job whose result partitions' minimum buffers do
// not fit the network memory of the TaskManagers it is placed on (what the
// running jobs did not book), before anything is deployed, with a message
// that says what to change. It returns what the job needs on each
// TaskManager, to book.
func (jm *JobManager) checkNetworkMemory(spec *JobSpec, slotTM []*taskManager) (map[*taskManager]int64, error) {
	need, channels, remote := networkNeeds(spec.Graph, spec.Network, slotTM)
	for _, tm := range jm.tms { // in registration order, for a stable message
		n, ok := need[tm]
		if !ok {
			continue
		}
		capacity := tm.reg.NetworkMemory
		free := capacity - tm.netReserved
		if n <= free {
			continue
		}
		have := fmt.Sprintf("its network memory is %s", memory.FormatBytes(capacity))
		if free < capacity {
			have += fmt.Sprintf(", of which %s are free", memory.FormatBytes(free))
		}
		why := fmt.Sprintf("one %s buffer for each of its %d output channels", memory.FormatBytes(int64(spec.Network.BufferSize)), channels[tm])
		if r := remote[tm]; r > 0 {
			why += fmt.Sprintf(", and %d for each of its %d input channels from other TaskManagers (taskmanager.network.memory.buffers-per-channel)",
				spec.Network.BuffersPerChannel, r)
		}
		return nil, fmt.Errorf("not enough network memory: the job needs %s on TaskManager %s (%s) but %s; "+
			"raise taskmanager.memory.network.max (weir.Config.NetworkMemory, weir run --network-memory), lower the parallelism, or use smaller network buffers (--buffer-size)",
			memory.FormatBytes(n), tm.reg.ID, why, have)
	}
	return need, nil
}

// networkNeeds returns, per TaskManager, the bytes of buffers that the
// subtasks placed on it need at least (slot s is on TaskManager slotTM[s];
// subtask s of every vertex runs in slot s): their result partitions' (of
// channels output channels) and their remote input channels' (remote of
// them, whose producers run in another TaskManager with a data plane; each
// owns BuffersPerChannel buffers, decision 20).
func networkNeeds(g *graph.JobGraph, cfg NetworkConfig, slotTM []*taskManager) (bytes, channels, remote map[*taskManager]int64) {
	bytes, channels, remote = map[*taskManager]int64{}, map[*taskManager]int64{}, map[*taskManager]int64{}
	// Without data planes (the embedded cluster) no channel is remote:
	// the per-channel loop below is skipped.
	data := slices.ContainsFunc(slotTM, func(t *taskManager) bool { return t.reg.DataAddress != "" })
	for _, v := range g.Vertices {
		for _, e := range v.Outputs {
			for s := range v.Parallelism {
				lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, s)
				fewest, _ := cfg.PoolBounds(hi - lo)
				bytes[slotTM[s]] += int64(fewest) * int64(cfg.BufferSize)
				channels[slotTM[s]] += int64(hi - lo)
				for c := lo; data && c < hi; c++ {
					if from, to := slotTM[s], slotTM[c]; from != to && to.reg.DataAddress != "" {
						bytes[to] += int64(cfg.BuffersPerChannel) * int64(cfg.BufferSize)
						remote[to]++
					}
				}
			}
		}
	}
	return bytes, channels, remote
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
	jm.updateLocked(j, i, u)
}

// updateLocked records that execution i of the current attempt reached
// u.State; a failure of a running job goes to the restart strategy.
func (jm *JobManager) updateLocked(j *job, i int, u protocol.TaskStateUpdate) {
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
		if t := j.tmOf[i]; t != nil {
			f.TaskManager = t.reg.ID
		}
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
	jm.cancelLocked(j, toCancel)
	jm.afterUpdateLocked(j)
}

// execLocked finds the job and execution index of an execution of the
// current attempt; messages from earlier attempts, and about executions on
// a lost TaskManager, are dropped.
func (jm *JobManager) execLocked(e ExecutionID) (*job, int, bool) {
	j, ok := jm.jobs[e.Job]
	if !ok || e.Attempt != j.attempt {
		return nil, 0, false
	}
	i, ok := j.index[[2]int{e.Vertex, e.Subtask}]
	if ok && j.tmOf[i] != nil && j.tmOf[i].lost {
		return nil, 0, false
	}
	return j, i, ok
}

func (j *job) taskName(e ExecutionID) string {
	v := j.spec.Graph.Vertices[e.Vertex]
	return fmt.Sprintf("%s (%d/%d)", v.Name, e.Subtask+1, v.Parallelism)
}

// afterUpdateLocked reacts to the job state: a finished restart cycle
// schedules the next attempt; a terminal job is recorded as ended.
func (jm *JobManager) afterUpdateLocked(j *job) {
	if j.state.status == protocol.JobRestarting && !j.times[protocol.JobRestarting].After(j.times[protocol.JobRunning]) {
		// It entered RESTARTING now (Flink's timestamps hold the latest
		// entry into each state): failover benchmarks read it.
		j.times[protocol.JobRestarting] = j.spec.Clock.Now()
	}
	if j.state.readyToRestart() {
		attempt, delay := j.attempt, j.restartDelay
		j.restartDelay = -1 // scheduled
		if delay >= 0 && !j.redeployAt.IsZero() {
			delay = max(delay, j.redeployAt.Sub(j.spec.Clock.Now()))
		}
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
	if j.cp != nil && len(j.cp.writing) > 0 {
		// A checkpoint's metadata is being written (and recorded): it may
		// become the latest, which the restart must restore (finalized
		// restarts the job once the last write ended).
		j.cp.restartWaits = true
		return
	}
	if j.cp != nil {
		if m := j.cp.latest; m != nil {
			j.restore, j.restoreStore = m, j.spec.Checkpoints.Store
		}
	}
	for _, tm := range jm.tms {
		tm.send(protocol.ReleaseJob{JobID: j.spec.ID, Attempt: j.attempt})
	}
	jm.releaseSlotsLocked(j)
	clear(j.tmOf) // nothing of the next attempt is placed yet
	j.deployed, j.redeployAt = nil, time.Time{}
	j.attempt++
	j.restarts++
	for i := range j.execs {
		j.execs[i].Attempt = j.attempt
	}
	clear(j.stats) // the new attempt's executions have reported nothing
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
	if err := jm.scheduleLocked(j, plan); err != nil {
		jm.failLocked(j, fmt.Errorf("restarting the job: %w", err))
	}
}

// cancelLocked queues the cancellation of the deployed executions among
// toCancel.
func (jm *JobManager) cancelLocked(j *job, toCancel []int) {
	for _, k := range toCancel {
		if j.deployed == nil || !j.deployed[k] {
			if j.waiting != nil { // never deployed, and no deploy loop reports it
				j.state.update(k, protocol.TaskCanceled, nil, false)
			}
			continue
		}
		j.tmOf[k].send(protocol.CancelTask{Exec: j.execs[k]})
	}
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
	j.stopWaitingLocked()
	jm.releaseSlotsLocked(j)
	for _, tm := range jm.tms {
		tm.send(protocol.ReleaseJob{JobID: j.spec.ID, Attempt: j.attempt, Ended: true})
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
	jm.wakeWaitingLocked() // its slots may be what another job waits for
}

// placeAttemptLocked tells each TaskManager holding a slot of the current
// attempt where every slot of it runs (protocol.DeployAttempt), ahead of
// its deployments there, when the slots are on TaskManagers with a data
// plane: their channels to subtasks elsewhere go over it. The embedded
// cluster's TaskManagers have none (their shuffle is shared): nothing is
// sent.
func (jm *JobManager) placeAttemptLocked(j *job) {
	if !slices.ContainsFunc(j.slotTM, func(t *taskManager) bool { return t.reg.DataAddress != "" }) {
		return
	}
	m := protocol.DeployAttempt{JobID: j.spec.ID, Attempt: j.attempt, Slots: make([]protocol.SlotPlacement, len(j.slotTM))}
	for s, t := range j.slotTM {
		m.Slots[s] = protocol.SlotPlacement{TaskManager: t.reg.ID, DataAddress: t.reg.DataAddress, Allocation: jm.allocation(j, s)}
	}
	for s, t := range j.slotTM {
		if slices.Index(j.slotTM, t) == s { // once per TaskManager
			t.send(m)
		}
	}
}
