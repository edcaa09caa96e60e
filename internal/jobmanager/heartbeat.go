package jobmanager

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/heartbeat"
	"github.com/weirhq/weir/internal/protocol"
)

// Heartbeats (docs/distributed-runtime.md, decisions 10-13). A
// heartbeat.Monitor watches every registered TaskManager, on the clock of
// HeartbeatConfig. It is pure and kept under jm.mu like the rest of the
// JobManager's state: its outputs are applied there (a loss through
// loseLocked, a reply queued in the TaskManager's outbox), and one
// goroutine calls Tick at the Monitor's WakeAt, so nothing calls out under
// the lock.
//
// Each heartbeat is reconciled with what the JobManager deployed on the
// TaskManager (heartbeat.Reconcile): an execution it runs under an
// allocation the JobManager does not hold is cancelled; one the JobManager
// deployed there, that the heartbeat should reflect (its Processed covers
// the deployment's seq) and does not report, fails as missing. The seq of a
// deployment is known only when the TaskManager's gateway numbers its
// messages (a Sent method, as rpc.ServerSession has); over the loopback it
// is not, and nothing is flagged missing.
//
// Where it departs from decision 10: a reply acknowledges the heartbeat it
// answers by the heartbeat's own Seq (the TaskManager's count), not by the
// last TaskManager message seq the JobManager processed. The Member needs
// only to know which heartbeat was answered, and so the same holds over
// the loopback, which numbers no message.

// HeartbeatConfig is heartbeat.interval and heartbeat.timeout on the
// JobManager's side.
type HeartbeatConfig struct {
	// Interval is heartbeat.interval (0: heartbeat.DefaultInterval): it
	// only adds to the time a job lost by silence waits before it is
	// deployed again (decision 13).
	Interval time.Duration
	// Timeout is heartbeat.timeout (0: heartbeat.DefaultTimeout): a
	// TaskManager silent that long is lost. NoTimeout turns loss by
	// silence off (the embedded cluster, decision 11).
	Timeout time.Duration
	// Clock times them (nil: the system clock). The earliest redeployment
	// after a loss is a time on it, which the restart compares with the
	// job's clock: give both the same one.
	Clock clock.Clock
}

// NoTimeout is HeartbeatConfig.Timeout for no loss by silence.
const NoTimeout time.Duration = -1

// offTimeout stands for NoTimeout in heartbeat.Settings: a century.
const offTimeout = 100 * 365 * 24 * time.Hour

// monitor is the JobManager's heartbeat.Monitor and what runs it. Its
// fields are guarded by jm.mu.
type monitor struct {
	m   *heartbeat.Monitor
	clk clock.Clock
	// timed: loss by silence is on, and run ticks the Monitor.
	timed bool
	// wake is the Monitor's latest WakeAt; armed the time run's timer is
	// set for (0: none).
	wake, armed int64
	rearm       chan struct{} // a wake earlier than armed
	stop        chan struct{}
}

func newMonitor(cfg HeartbeatConfig) (*monitor, error) {
	s := heartbeat.Settings{Interval: cfg.Interval, Timeout: cfg.Timeout}
	timed := s.Timeout != NoTimeout
	if !timed {
		s.Timeout = offTimeout
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &monitor{m: heartbeat.NewMonitor(s), clk: cfg.Clock, timed: timed,
		rearm: make(chan struct{}, 1), stop: make(chan struct{})}, nil
}

// MonitorHeartbeats watches the TaskManagers' heartbeats with cfg from now
// on, the TaskManagers registered already included (their silence counts
// from now). Without it the JobManager answers heartbeats and never loses
// a TaskManager by silence. Call it once, before the TaskManagers start
// heartbeating; StopHeartbeats ends it.
func (jm *JobManager) MonitorHeartbeats(cfg HeartbeatConfig) error {
	mon, err := newMonitor(cfg)
	if err != nil {
		return err
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.hb != nil {
		panic("jobmanager: MonitorHeartbeats called twice")
	}
	jm.hb = mon
	now := mon.clk.NowMillis()
	for _, tm := range jm.tms {
		jm.applyMonitorLocked(mon.m.Register(now, tm.reg.ID, ""), "")
	}
	if mon.timed {
		go jm.runMonitor(mon)
	}
	return nil
}

// StopHeartbeats ends the monitor's goroutine.
func (jm *JobManager) StopHeartbeats() {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.hb != nil {
		select {
		case <-jm.hb.stop:
		default:
			close(jm.hb.stop)
		}
	}
}

// runMonitor ticks the Monitor at its WakeAt until StopHeartbeats.
func (jm *JobManager) runMonitor(mon *monitor) {
	for {
		jm.mu.Lock()
		wake := mon.wake
		mon.armed = wake
		jm.mu.Unlock()
		var fire <-chan time.Time
		var t clock.Timer
		if wake != 0 {
			t = mon.clk.NewTimer(time.Duration(wake-mon.clk.NowMillis()) * time.Millisecond)
			fire = t.C()
		}
		select {
		case <-mon.stop:
			if t != nil {
				t.Stop()
			}
			return
		case <-mon.rearm:
			if t != nil {
				t.Stop()
			}
		case <-fire:
			jm.mu.Lock()
			jm.applyMonitorLocked(mon.m.Tick(mon.clk.NowMillis()), "")
			jm.mu.Unlock()
		}
	}
}

// applyMonitorLocked applies a Monitor output's losses (but not one of
// skip, lost already) and its WakeAt; replies are the caller's.
func (jm *JobManager) applyMonitorLocked(o heartbeat.MonitorOutput, skip string) {
	mon := jm.hb
	for _, l := range o.Lost {
		if l.Target != skip {
			jm.loseLocked(l.Target, errors.New(l.Reason), time.UnixMilli(l.RedeployAt))
		}
	}
	mon.wake = o.WakeAt
	if mon.timed && o.WakeAt != 0 && (mon.armed == 0 || o.WakeAt < mon.armed) {
		select {
		case mon.rearm <- struct{}{}:
		default:
		}
	}
}

// monitorRegisterLocked starts watching a TaskManager that registered; one
// it replaces was lost already.
func (jm *JobManager) monitorRegisterLocked(id string) {
	if jm.hb != nil {
		jm.applyMonitorLocked(jm.hb.m.Register(jm.hb.clk.NowMillis(), id, ""), id)
	}
}

// monitorForgetLocked stops watching a TaskManager lost otherwise
// (TaskManagerLost).
func (jm *JobManager) monitorForgetLocked(id string) {
	if jm.hb != nil {
		jm.applyMonitorLocked(jm.hb.m.Deregister(jm.hb.clk.NowMillis(), id), id)
	}
}

// TaskManagerSessionEnded loses TaskManager id whose session ended (its
// transport's end, with the cause's text). peerClosed says the TaskManager
// ended it (its process is gone or it closed the stream), so its jobs may
// be deployed again at once; otherwise they wait as after a loss by
// silence (decision 13), since it may not know yet.
func (jm *JobManager) TaskManagerSessionEnded(id, cause string, peerClosed bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.hb == nil {
		jm.loseLocked(id, errors.New("session ended ("+cause+")"), time.Time{})
		return
	}
	jm.applyMonitorLocked(jm.hb.m.SessionEnded(jm.hb.clk.NowMillis(), id, cause, peerClosed), "")
}

// Deregister implements protocol.JobManagerGateway: the TaskManager is
// lost at once, and its jobs may be deployed again at once (it cancels its
// executions itself).
func (jm *JobManager) Deregister(d protocol.Deregister) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	cause := "deregistered"
	if d.Reason != "" {
		cause += " (" + d.Reason + ")"
	}
	if jm.hb == nil {
		jm.loseLocked(d.TaskManager, errors.New(cause), time.Time{})
		return
	}
	o := jm.hb.m.Deregister(jm.hb.clk.NowMillis(), d.TaskManager)
	for i, l := range o.Lost {
		if l.Target == d.TaskManager && d.Reason != "" {
			o.Lost[i].Reason += " (" + d.Reason + ")"
		}
	}
	jm.applyMonitorLocked(o, "")
}

// Heartbeat implements protocol.JobManagerGateway: the Monitor hears the
// TaskManager, the heartbeat is reconciled with what the JobManager
// deployed there, its counters are kept for the REST API, and the reply
// (the allocations held there) is queued. A heartbeat of a TaskManager
// that is not registered (lost) is ignored.
func (jm *JobManager) Heartbeat(h protocol.Heartbeat) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	k := slices.IndexFunc(jm.tms, func(t *taskManager) bool { return t.reg.ID == h.TaskManager })
	if k < 0 {
		return
	}
	tm := jm.tms[k]
	if jm.hb != nil {
		o := jm.hb.m.Heartbeat(jm.hb.clk.NowMillis(), h.TaskManager, h.Processed)
		jm.applyMonitorLocked(o, "")
		if !slices.Contains(o.Reply, h.TaskManager) {
			return // lost, in this call or before
		}
	}
	jm.reconcileLocked(tm, h)
	for k := range h.Stats {
		if j, i, ok := jm.execLocked(h.Stats[k].Exec); ok && j.tmOf[i] == tm {
			j.stats[i] = &h.Stats[k].Stats
		}
	}
	tm.send(protocol.HeartbeatReply{Acked: h.Seq, Held: jm.heldLocked(tm)})
}

type (
	deployed = heartbeat.Deployed[ExecutionID, protocol.AllocationID]
	reported = heartbeat.Reported[ExecutionID, protocol.AllocationID]
)

// reconcileLocked compares heartbeat h of tm with what the JobManager
// deployed there: it cancels what tm runs unheld and fails what is missing
// there.
func (jm *JobManager) reconcileLocked(tm *taskManager, h protocol.Heartbeat) {
	var deps []deployed
	for _, id := range jm.ids {
		j := jm.jobs[id]
		for i, t := range j.tmOf {
			if t != tm || j.deployed == nil || !j.deployed[i] {
				continue
			}
			e := j.execs[i]
			deps = append(deps, deployed{Exec: e, Alloc: jm.allocation(j, e.Subtask), Seq: math.MaxUint64,
				Terminal: j.state.tasks[i].Terminal()})
		}
	}
	tm.seqsOf(deps)
	reps := make([]reported, len(h.Executions))
	for i, x := range h.Executions {
		reps[i] = reported{Exec: x.Exec, Alloc: x.Allocation, Terminal: x.State.Terminal()}
	}
	r := heartbeat.Reconcile(deps, reps, h.Processed)
	for _, e := range r.Cancel {
		jm.logger.Warn("cancelling an execution the JobManager does not hold", "taskmanager", tm.reg.ID, "exec", e.String())
		tm.send(protocol.CancelTask{Exec: e})
	}
	for _, e := range r.Missing {
		if j, i, ok := jm.execLocked(e); ok {
			jm.updateLocked(j, i, protocol.TaskStateUpdate{Exec: e, State: protocol.TaskFailed,
				Failure: &protocol.Failure{Message: heartbeat.MissingReason(tm.reg.ID), Task: j.taskName(e)}})
		}
	}
}

// heldLocked is the allocations the current attempts hold on tm.
func (jm *JobManager) heldLocked(tm *taskManager) []protocol.AllocationID {
	held := []protocol.AllocationID{}
	for _, id := range jm.ids {
		j := jm.jobs[id]
		for s, t := range j.slotTM {
			if t == tm {
				held = append(held, jm.allocation(j, s))
			}
		}
	}
	return held
}

// noteSent records the seq of the Deployment of e just delivered, when the
// gateway numbers its messages. Called by the delivering goroutine.
func (t *taskManager) noteSent(e ExecutionID) {
	s, ok := t.gw.(interface{ Sent() uint64 })
	if !ok {
		return
	}
	seq := s.Sent()
	t.mu.Lock()
	if t.seqs == nil {
		t.seqs = map[ExecutionID]uint64{}
	}
	t.seqs[e] = seq
	t.mu.Unlock()
}

// seqsOf sets the Seq of each of deps whose deployment was delivered and
// numbered, and forgets the seqs of executions no longer deployed. Called
// with jm.mu held.
func (t *taskManager) seqsOf(deps []deployed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.seqs) == 0 {
		return
	}
	keep := make(map[ExecutionID]bool, len(deps))
	for i := range deps {
		keep[deps[i].Exec] = true
		if s, ok := t.seqs[deps[i].Exec]; ok {
			deps[i].Seq = s
		}
	}
	for e := range t.seqs {
		if !keep[e] {
			delete(t.seqs, e)
		}
	}
}

// TaskManagerHeartbeat is when the JobManager last heard TaskManager id
// (its registration before its first heartbeat) and how many heartbeats it
// sent, on the heartbeat clock; ok is false for one not registered.
func (jm *JobManager) TaskManagerHeartbeat(id string) (last time.Time, heartbeats int, ok bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.hb == nil {
		return time.Time{}, 0, false
	}
	st, ok := jm.hb.m.Target(id)
	return time.UnixMilli(st.LastHeard), st.Heartbeats, ok
}
