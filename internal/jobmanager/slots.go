package jobmanager

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// Membership and slots (docs/distributed-runtime.md, decisions 12 and 14).
//
// TaskManagers are known by their registration id. Each attempt of a job
// allocates its slots when it is deployed, over the TaskManagers registered
// then, in registration order: job slot s gets the next free slot, and
// subtask s of every vertex runs in it (slot sharing). The attempt holds
// them, and the network memory its result partitions need there, until it
// ends; the next attempt allocates anew, so a job fails over onto a spare
// TaskManager. An attempt that finds too few free slots waits, its
// executions SCHEDULED, until TaskManagers register or other jobs free
// slots, for at most JobSpec.SlotRequestTimeout; then it fails through the
// restart strategy.
//
// A lost TaskManager (TaskManagerLost) is removed at once: every execution
// on it fails with the cause, what its jobs held there is released, and
// nothing more is sent to it or taken from it (messages about executions
// on it are dropped by execLocked; it is never allocated again).

// slotWait is an attempt's wait for slots.
type slotWait struct {
	plan map[ExecutionID]*protocol.TaskRestore
	// stop ends the timeout's goroutine.
	stop chan struct{}
}

// TaskManagerLost removes TaskManager id: every execution on it fails with
// cause, its jobs' slots and network memory there are released, and later
// messages about its executions are ignored. Its jobs restart through
// their restart strategy from their latest completed checkpoint, on the
// TaskManagers that remain or register, and no sooner than redeployAt
// (zero: no bound), by when a TaskManager lost by silence has fenced
// itself (decision 13). The failure text is cause's own when it names the
// TaskManager (heartbeat.Loss.Reason does: "TaskManager tm-2 (host) lost:
// no heartbeat for 5s ..."), else "TaskManager <id> lost: <cause>". The
// cluster's transport calls it with a heartbeat.Monitor's losses; losing
// an unknown (or already lost) TaskManager does nothing.
func (jm *JobManager) TaskManagerLost(id string, cause error, redeployAt time.Time) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.loseLocked(id, cause, redeployAt) {
		jm.monitorForgetLocked(id)
	}
}

// loseLocked is TaskManagerLost; it reports whether id was registered.
func (jm *JobManager) loseLocked(id string, cause error, redeployAt time.Time) bool {
	k := slices.IndexFunc(jm.tms, func(t *taskManager) bool { return t.reg.ID == id })
	if k < 0 {
		return false
	}
	tm := jm.tms[k]
	jm.tms = slices.Delete(jm.tms, k, k+1)
	tm.lost = true
	msg := lossText(id, cause)
	jm.logger.Warn("TaskManager lost", "taskmanager", id, "cause", msg)
	for _, jid := range jm.ids {
		j := jm.jobs[jid]
		if j.state.status.Terminal() || !slices.Contains(j.tmOf, tm) {
			continue
		}
		if redeployAt.After(j.redeployAt) {
			j.redeployAt = redeployAt
		}
		for i, t := range j.tmOf {
			if t != tm || j.state.tasks[i].Terminal() {
				continue
			}
			jm.updateLocked(j, i, protocol.TaskStateUpdate{Exec: j.execs[i], State: protocol.TaskFailed,
				Failure: &protocol.Failure{Message: msg, Task: j.taskName(j.execs[i])}})
		}
	}
	return true
}

// lossText is the failure text of TaskManagerLost: cause's own when it
// names the TaskManager, else "TaskManager <id> lost: <cause>".
func lossText(id string, cause error) string {
	msg := cause.Error()
	if rest, ok := strings.CutPrefix(msg, "TaskManager "+id); ok && (rest == "" || rest[0] == ' ') {
		return msg
	}
	return fmt.Sprintf("TaskManager %s lost: %s", id, msg)
}

// pickSlotsLocked chooses need free slots over the registered TaskManagers,
// in registration order: slotTM[s] holds job slot s. It returns nil and the
// free slots there are when they are fewer than need.
func (jm *JobManager) pickSlotsLocked(need int) (slotTM []*taskManager, free int) {
	slotTM = make([]*taskManager, 0, need)
	for _, tm := range jm.tms {
		free += tm.free
		for range tm.free {
			if len(slotTM) < need {
				slotTM = append(slotTM, tm)
			}
		}
	}
	if len(slotTM) < need {
		return nil, free
	}
	return slotTM, free
}

// scheduleLocked allocates the current attempt's slots and deploys it, or,
// with too few free slots, makes it wait for them. An error (the network
// memory does not fit) leaves nothing allocated.
func (jm *JobManager) scheduleLocked(j *job, plan map[ExecutionID]*protocol.TaskRestore) error {
	slotTM, free := jm.pickSlotsLocked(j.need)
	if slotTM == nil {
		jm.waitForSlotsLocked(j, plan, free)
		return nil
	}
	net, err := jm.checkNetworkMemory(j.spec, slotTM)
	if err != nil {
		return err
	}
	for _, tm := range slotTM {
		tm.free--
	}
	for tm, n := range net {
		tm.netReserved += n
	}
	j.slotTM, j.netReserved = slotTM, net
	jm.deployLocked(j, plan)
	return nil
}

// waitForSlotsLocked makes the current attempt wait for slots: its
// executions are SCHEDULED; wakeWaitingLocked deploys it once enough slots
// are free, and past the slot request timeout it fails.
func (jm *JobManager) waitForSlotsLocked(j *job, plan map[ExecutionID]*protocol.TaskRestore, free int) {
	for i := range j.state.tasks {
		j.state.tasks[i] = protocol.TaskScheduled
	}
	w := &slotWait{plan: plan, stop: make(chan struct{})}
	j.waiting = w
	timeout := j.slotRequestTimeout()
	jm.logger.Info("waiting for task slots", "job", j.spec.ID, "attempt", j.attempt, "needed", j.need, "free", free,
		"TaskManagers", len(jm.tms), "timeout", timeout)
	tm := j.spec.Clock.NewTimer(timeout)
	go func() {
		select {
		case <-tm.C():
			jm.slotRequestTimedOut(j, w)
		case <-w.stop:
			tm.Stop()
		}
	}()
}

func (j *job) slotRequestTimeout() time.Duration {
	if d := j.spec.SlotRequestTimeout; d > 0 {
		return d
	}
	return DefaultSlotRequestTimeout
}

// stopWaitingLocked ends the current attempt's wait for slots, if any, and
// returns its restore plan.
func (j *job) stopWaitingLocked() map[ExecutionID]*protocol.TaskRestore {
	w := j.waiting
	if w == nil {
		return nil
	}
	j.waiting = nil
	close(w.stop)
	return w.plan
}

// wakeWaitingLocked deploys the attempts waiting for slots that fit now,
// in submission order.
func (jm *JobManager) wakeWaitingLocked() {
	for _, id := range jm.ids {
		j := jm.jobs[id]
		if j.waiting == nil {
			continue
		}
		if slotTM, _ := jm.pickSlotsLocked(j.need); slotTM == nil {
			continue
		}
		plan := j.stopWaitingLocked()
		for i := range j.state.tasks {
			j.state.tasks[i] = protocol.TaskCreated
		}
		jm.logger.Info("task slots available; deploying", "job", j.spec.ID, "attempt", j.attempt)
		if err := jm.scheduleLocked(j, plan); err != nil {
			jm.failLocked(j, err)
		}
	}
}

// slotRequestTimedOut fails an attempt that waited for slots past its
// timeout through the restart strategy, as a failed task does.
func (jm *JobManager) slotRequestTimedOut(j *job, w *slotWait) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j.waiting != w {
		return // deployed, or the job ended, meanwhile
	}
	_, free := jm.pickSlotsLocked(j.need)
	where := fmt.Sprintf("%d are free on %d TaskManagers", free, len(jm.tms))
	err := fmt.Errorf("could not get the %d task slots the job needs (its largest parallelism) within slot.request.timeout (%v): %s; "+
		"start TaskManagers with more slots, lower the parallelism, or raise slot.request.timeout (weir.Config.SlotRequestTimeout, weir run -D slot.request.timeout=10min)",
		j.need, j.slotRequestTimeout(), where)
	j.stopWaitingLocked()
	jm.updateLocked(j, 0, protocol.TaskStateUpdate{Exec: j.execs[0], State: protocol.TaskFailed,
		Failure: &protocol.Failure{Message: err.Error()}})
	// The other executions were never deployed: nothing to wait for.
	for i := range j.execs {
		if !j.state.tasks[i].Terminal() {
			j.state.update(i, protocol.TaskCanceled, nil, false)
		}
	}
	jm.afterUpdateLocked(j)
}

// releaseSlotsLocked frees the slots and network memory the current
// attempt holds (nothing on lost TaskManagers: they are gone).
func (jm *JobManager) releaseSlotsLocked(j *job) {
	for _, tm := range j.slotTM {
		tm.free++
	}
	for tm, n := range j.netReserved {
		tm.netReserved -= n
	}
	j.slotTM, j.netReserved = nil, nil
}

// allocation is the AllocationID of job slot s of the current attempt.
func (jm *JobManager) allocation(j *job, s int) protocol.AllocationID {
	return protocol.AllocationID{Epoch: leaderEpoch, Job: j.spec.ID, Attempt: j.attempt, Slot: s}
}

// leaderEpoch is the JobManager's leader epoch, fixed until high
// availability gives it meaning (decision 7).
const leaderEpoch = 0
