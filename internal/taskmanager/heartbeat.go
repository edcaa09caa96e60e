package taskmanager

import (
	"cmp"
	"slices"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/heartbeat"
	"github.com/weirhq/weir/internal/protocol"
)

// Heartbeats configure a TaskManager's registration and heartbeats
// (docs/distributed-runtime.md, decisions 10-13), which a heartbeat.Member
// decides: a heartbeat every Interval carrying what it runs and its
// executions' counters, the cancellation of what the JobManager's reply no
// longer holds, and fencing itself when it has lost the JobManager.
type Heartbeats struct {
	// Interval is heartbeat.interval (0: heartbeat.DefaultInterval).
	Interval time.Duration
	// Timeout is heartbeat.timeout (0: heartbeat.DefaultTimeout): with no
	// reply for that long the TaskManager fences itself. NoTimeout turns
	// it off: a TaskManager in the JobManager's process cannot lose it.
	Timeout time.Duration
	// Clock times them (nil: the system clock).
	Clock clock.Clock
	// Seed draws the registration backoff's jitter.
	Seed uint64
	// Register registers the TaskManager with the JobManager once and
	// returns the session's leader epoch and id, or why it failed (retried
	// with backoff up to taskmanager.registration.timeout). Start makes the
	// first attempt in its caller's goroutine.
	Register func() (epoch uint64, session string, err error)
}

// NoTimeout is Heartbeats.Timeout (and jobmanager.HeartbeatConfig.Timeout)
// for no loss by silence: the embedded cluster's (decision 11).
const NoTimeout time.Duration = -1

// offTimeout stands for NoTimeout in heartbeat.Settings, which needs a
// timeout: a century, never reached.
const offTimeout = 100 * 365 * 24 * time.Hour

// Settings returns the heartbeat.Settings of h, checked.
func (h Heartbeats) Settings() (heartbeat.Settings, error) {
	s := heartbeat.Settings{Interval: h.Interval, Timeout: h.Timeout}
	if s.Timeout == NoTimeout {
		s.Timeout = offTimeout
	}
	s = s.WithDefaults()
	return s, s.Validate()
}

// beats drives a TaskManager's heartbeat.Member. The Member is used by
// Start and then by the run goroutine only.
type beats struct {
	tm      *TaskManager
	cfg     Heartbeats
	clk     clock.Clock
	m       *heartbeat.Member
	seq     uint64 // the last heartbeat's Seq
	replies chan uint64
}

// Start registers with the JobManager through Heartbeats.Register (the
// first attempt in the caller's goroutine, so a registration that succeeds
// at once is done when Start returns) and then heartbeats every
// heartbeat.interval until Shutdown. The heartbeat replaces a periodic
// stats report: the REST API's counters ride it. An error is a setting
// that is not valid; call Start once.
func (tm *TaskManager) Start() error {
	cfg := tm.heartbeats
	s, err := cfg.Settings()
	if err != nil {
		return err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Register == nil {
		panic("taskmanager.Start: Heartbeats.Register is nil")
	}
	b := &beats{tm: tm, cfg: cfg, clk: cfg.Clock, m: heartbeat.NewMember(s, cfg.Seed), replies: make(chan uint64, 16)}
	if !tm.beats.CompareAndSwap(nil, b) {
		panic("taskmanager.Start called twice")
	}
	wake := b.apply(b.m.Start(b.clk.NowMillis()))
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.closed {
		return nil
	}
	tm.wg.Add(1)
	go b.run(wake)
	return nil
}

// apply carries out a Member's output in its order (see
// heartbeat.MemberOutput) and those of the events it causes; it returns
// when to call Tick next (0: never).
func (b *beats) apply(o heartbeat.MemberOutput) int64 {
	for {
		if o.Fence != "" {
			b.tm.fence(o.Fence)
		}
		if o.GiveUp != nil {
			b.tm.logger.Error("TaskManager gave up registering", "taskmanager", b.tm.id, "err", o.GiveUp)
			return 0
		}
		switch {
		case o.Register:
			epoch, session, err := b.cfg.Register()
			if err != nil {
				b.tm.logger.Warn("registration failed", "taskmanager", b.tm.id, "err", err)
				o = b.m.RegisterFailed(b.clk.NowMillis(), err.Error())
			} else {
				o = b.m.Registered(b.clk.NowMillis(), epoch, session)
			}
		case o.Heartbeat:
			b.seq++
			b.tm.sendHeartbeat(b.seq)
			o = b.m.HeartbeatSent(b.clk.NowMillis(), b.seq)
		default:
			return o.WakeAt
		}
	}
}

// run wakes the Member at its times and with the replies, until Shutdown.
func (b *beats) run(wake int64) {
	defer b.tm.wg.Done()
	for {
		var fire <-chan time.Time
		var t clock.Timer
		if wake != 0 {
			t = b.clk.NewTimer(time.Duration(wake-b.clk.NowMillis()) * time.Millisecond)
			fire = t.C()
		}
		select {
		case <-b.tm.stop:
			if t != nil {
				t.Stop()
			}
			return
		case <-fire:
			wake = b.apply(b.m.Tick(b.clk.NowMillis()))
		case acked := <-b.replies:
			if t != nil {
				t.Stop()
			}
			wake = b.apply(b.m.Reply(b.clk.NowMillis(), acked))
		}
	}
}

// sendHeartbeat sends heartbeat seq: the executions running here with
// their allocations, states and counters, what the JobManager's messages
// it reflects, and the free memory.
func (tm *TaskManager) sendHeartbeat(seq uint64) {
	tm.reportMu.Lock()
	defer tm.reportMu.Unlock()
	h := protocol.Heartbeat{TaskManager: tm.id, Seq: seq, FreeNetworkMemory: tm.budget.Capacity() - tm.budget.Used()}
	// Read before the executions: every deployment up to Processed is
	// among them, or has reported its end before this heartbeat.
	if r, ok := tm.jm.gw.(interface{ Received() uint64 }); ok {
		h.Processed = r.Received()
	}
	if tm.heapMem != nil {
		h.HeapStateUsed = tm.heapMem.Used()
	}
	tm.mu.Lock()
	execs := make([]protocol.ExecutionID, 0, len(tm.live))
	for e := range tm.live {
		execs = append(execs, e)
	}
	slices.SortFunc(execs, compareExecs)
	for _, e := range execs {
		r := tm.live[e]
		st := protocol.TaskInitializing
		if r.up.Load() {
			st = protocol.TaskRunning
		}
		h.Executions = append(h.Executions, protocol.ExecutionReport{Exec: e, Allocation: r.alloc, State: st})
		h.Stats = append(h.Stats, protocol.ExecutionStats{Exec: e, Stats: statsOf(r.task)})
	}
	tm.mu.Unlock()
	tm.jm.Heartbeat(h)
}

func compareExecs(a, b protocol.ExecutionID) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.Vertex, b.Vertex), cmp.Compare(a.Subtask, b.Subtask))
}

// HeartbeatReply implements protocol.TaskManagerGateway: the executions
// running under an allocation the reply does not hold are cancelled
// (heartbeat.Unheld), here, in the order of the JobManager's messages, so
// a deployment sent after the reply is not among them; the Member learns
// of the reply on its goroutine.
func (tm *TaskManager) HeartbeatReply(r protocol.HeartbeatReply) {
	tm.mu.Lock()
	running := make([]heartbeat.Reported[protocol.ExecutionID, protocol.AllocationID], 0, len(tm.live))
	for e, x := range tm.live {
		running = append(running, heartbeat.Reported[protocol.ExecutionID, protocol.AllocationID]{Exec: e, Alloc: x.alloc})
	}
	tm.mu.Unlock()
	unheld := heartbeat.Unheld(running, r.Held)
	slices.SortFunc(unheld, compareExecs)
	for _, e := range unheld {
		tm.logger.Warn("cancelling an execution the JobManager no longer holds", "taskmanager", tm.id, "exec", e.String())
		tm.CancelTask(e)
	}
	if b := tm.beats.Load(); b != nil {
		select {
		case b.replies <- r.Acked:
		default: // full: a later reply acknowledges as much
		}
	}
}

// fenceWait bounds how long a fenced TaskManager waits for its cancelled
// executions to end before it releases their partitions anyway.
const fenceWait = 30 * time.Second

// fence cancels every execution (the TaskManager has lost the JobManager,
// which runs their jobs elsewhere, decision 13) and, once they ended,
// releases their partitions.
func (tm *TaskManager) fence(reason string) {
	tm.logger.Warn("TaskManager fenced itself: cancelling every execution", "taskmanager", tm.id, "reason", reason)
	tm.mu.Lock()
	cancelled := make([]*running, 0, len(tm.live))
	for _, r := range tm.live {
		cancelled = append(cancelled, r)
	}
	release := map[string]int{}
	for job, seen := range tm.attempts {
		release[job] = seen.attempt
	}
	tm.mu.Unlock()
	for _, r := range cancelled {
		r.once.Do(func() { close(r.cancel) })
	}
	tm.wg.Add(1)
	go func() {
		defer tm.wg.Done()
		deadline := time.Now().Add(fenceWait)
		for time.Now().Before(deadline) && tm.anyLive(cancelled) {
			time.Sleep(5 * time.Millisecond)
		}
		for job, attempt := range release {
			tm.shuffle.Release(job, attempt)
		}
	}()
}

// anyLive reports whether one of rs has not ended.
func (tm *TaskManager) anyLive(rs []*running) bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for _, r := range tm.live {
		if slices.Contains(rs, r) {
			return true
		}
	}
	return false
}

// Deregister tells the JobManager the TaskManager leaves (SIGTERM), which
// loses it at once, then shuts it down: its executions are cancelled.
func (tm *TaskManager) Deregister(reason string) {
	tm.jm.Deregister(protocol.Deregister{TaskManager: tm.id, Reason: reason})
	tm.Shutdown()
}

func (s *silenceable) Heartbeat(h protocol.Heartbeat) {
	if !s.off.Load() {
		s.gw.Heartbeat(h)
	}
}

func (s *silenceable) Deregister(d protocol.Deregister) {
	if !s.off.Load() {
		s.gw.Deregister(d)
	}
}
