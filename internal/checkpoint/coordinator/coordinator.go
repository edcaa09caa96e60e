package coordinator

import (
	"fmt"
	"slices"
)

// Reasons a checkpoint ends without completing, in Aborted.Reason and the
// history. Task-supplied reasons are appended to the decline prefix.
const (
	reasonExpired    = "checkpoint expired before completing"
	reasonSuspending = "checkpoint coordinator is suspending"
	reasonSuspended  = "checkpoint coordinator is suspended"
	reasonQueueFull  = "too many queued checkpoint requests"
)

// Coordinator decides when checkpoints start, complete and fail. It is a
// pure state machine: events carry the time, and each returns the Output the
// caller must carry out. It is not safe for concurrent use; the caller
// serializes events (the JobManager calls it under its lock).
type Coordinator struct {
	s       Settings // valid, defaults applied
	tasks   int      // tasks that must acknowledge a checkpoint triggered now; >= 1
	sources []TaskID // shared with Trigger outputs, never modified
	nextID  int64    // id of the next checkpoint; ids only grow
	now     int64    // latest event time; events never move it back

	// pending holds checkpoints triggered and not yet ended, by increasing
	// id: in flight (awaiting acks) or finalizing (all acked, metadata being
	// written). At most s.MaxConcurrent are in flight; finalizing ones do not
	// count. Empty while suspended.
	pending []*checkpoint
	// queue holds TriggerNow requests waiting for an in-flight slot, oldest
	// first. Non-empty only when s.MaxConcurrent are in flight; empty while
	// suspended; at most MaxQueuedRequests long.
	queue []Kind

	suspended bool  // after Suspend or FailJob, until Resume: nothing triggers
	schedFrom int64 // the periodic schedule counts Interval from here: start, Resume or the last periodic trigger
	lastEnd   int64 // end of the last checkpoint, completed or failed; valid if ended
	ended     bool

	// consecutive counts counted failures since the last completed
	// checkpoint; always <= s.TolerableFailures between events (reaching
	// more fails the job and resets it).
	consecutive int
	// retained are completed checkpoints (not savepoints) still kept, by
	// increasing id; at most s.Retained.
	retained []int64

	history []HistoryEntry // the last s.HistorySize checkpoints, oldest first
	counts  Counts         // InProgress and Queued are filled in by Stats
}

// checkpoint is a pending checkpoint.
type checkpoint struct {
	id, trigger int64
	kind        Kind
	ackTime     []int64 // per task, -1 until acknowledged; len = tasks when triggered
	acked       int     // entries of ackTime >= 0
	finalizing  bool    // acked == len(ackTime): Finalize was output
}

// New returns a coordinator for a job of tasks executions, of which sources
// receive triggers, that started (or restored) at now. nextID is the first
// checkpoint id: 1 for a fresh job, the restored checkpoint's id + 1 after a
// restore. The first periodic checkpoint is due at now + Interval; call Tick
// right away to learn the first WakeAt.
//
// New panics on settings that fail Validate (after WithDefaults) and on
// impossible task sets: those are programming errors, user settings must be
// validated first.
func New(s Settings, tasks int, sources []TaskID, nextID int64, now int64) *Coordinator {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		panic(fmt.Sprintf("coordinator: invalid settings: %v", err))
	}
	if nextID < 1 {
		panic(fmt.Sprintf("coordinator: next checkpoint id %d, want >= 1", nextID))
	}
	c := &Coordinator{s: s, nextID: nextID, now: now, schedFrom: now}
	c.setTasks(tasks, sources)
	return c
}

func (c *Coordinator) setTasks(tasks int, sources []TaskID) {
	if tasks < 1 {
		panic(fmt.Sprintf("coordinator: %d tasks, want >= 1", tasks))
	}
	for _, t := range sources {
		if t < 0 || int(t) >= tasks {
			panic(fmt.Sprintf("coordinator: source task %d out of range [0,%d)", t, tasks))
		}
	}
	c.tasks = tasks
	c.sources = slices.Clone(sources)
}

// Settings returns the settings in use, defaults applied.
func (c *Coordinator) Settings() Settings { return c.s }

// Tick expires checkpoints whose timeout has passed and triggers what is
// due: queued requests, then a periodic checkpoint.
func (c *Coordinator) Tick(now int64) Output {
	var out Output
	now = c.advance(now, &out)
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// TriggerNow requests a checkpoint outside the schedule; kind is Final or
// Savepoint. It triggers at once when fewer than MaxConcurrent checkpoints
// are in flight, ignoring MinPause; otherwise it waits in a queue (a Note
// says so) and triggers, before any periodic checkpoint, as soon as a slot
// frees. It is rejected when the queue is full or the coordinator suspended.
func (c *Coordinator) TriggerNow(now int64, kind Kind) Output {
	if kind != Final && kind != Savepoint {
		panic(fmt.Sprintf("coordinator: TriggerNow(%s), want final or savepoint", kind))
	}
	var out Output
	now = c.advance(now, &out)
	c.drainQueue(now, &out) // slots that catching up freed go to earlier requests
	switch {
	case c.suspended:
		out.Rejected = append(out.Rejected, Rejected{Kind: kind, Reason: reasonSuspended})
	case len(c.queue) >= MaxQueuedRequests:
		out.Rejected = append(out.Rejected, Rejected{Kind: kind, Reason: fmt.Sprintf("%s (limit %d)", reasonQueueFull, MaxQueuedRequests)})
	default:
		c.queue = append(c.queue, kind)
		c.drainQueue(now, &out)
		if n := len(c.queue); n > 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("%s request queued (%d waiting): max-concurrent-checkpoints (%d) in flight",
				kind, n, c.s.MaxConcurrent))
		}
	}
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// Ack records that task acknowledged checkpoint id. When every task has, the
// output asks to write the metadata (Finalize); the checkpoint then no longer
// takes an in-flight slot, but is not complete before Finalized. Acks for
// unknown, ended or finalizing checkpoints, duplicates and tasks out of
// range are ignored with a Note.
func (c *Coordinator) Ack(now int64, id int64, task TaskID) Output {
	var out Output
	now = c.advance(now, &out)
	p := c.find(id)
	switch {
	case p == nil:
		out.Notes = append(out.Notes, fmt.Sprintf("ack of %d from task %d ignored: %s", id, task, c.whyNotPending(id)))
	case task < 0 || int(task) >= len(p.ackTime):
		out.Notes = append(out.Notes, fmt.Sprintf("ack of %d from task %d ignored: no such task (%d tasks)", id, task, len(p.ackTime)))
	case p.ackTime[task] >= 0:
		out.Notes = append(out.Notes, fmt.Sprintf("ack of %d from task %d ignored: duplicate", id, task))
	default:
		p.ackTime[task] = now
		p.acked++
		if h := c.historyEntry(id); h != nil {
			h.Acked, h.LatestAck = p.acked, now
		}
		if p.acked == len(p.ackTime) {
			p.finalizing = true
			out.Finalize = append(out.Finalize, id)
		}
	}
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// Decline aborts checkpoint id because task could not take part; counts says
// whether it counts as a failure (a snapshot failure does, a task that was
// not ready does not). A decline from a task that already acknowledged id,
// or for an id not pending, is ignored with a Note.
func (c *Coordinator) Decline(now int64, id int64, task TaskID, reason string, counts bool) Output {
	var out Output
	now = c.advance(now, &out)
	p := c.find(id)
	switch {
	case p == nil:
		out.Notes = append(out.Notes, fmt.Sprintf("decline of %d from task %d ignored: %s", id, task, c.whyNotPending(id)))
	case task < 0 || int(task) >= len(p.ackTime):
		out.Notes = append(out.Notes, fmt.Sprintf("decline of %d from task %d ignored: no such task (%d tasks)", id, task, len(p.ackTime)))
	case p.ackTime[task] >= 0:
		out.Notes = append(out.Notes, fmt.Sprintf("decline of %d from task %d ignored: the task already acknowledged it", id, task))
	default:
		c.abort(p, now, fmt.Sprintf("declined by task %d: %s", task, reason), counts, true, &out)
	}
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// Finalized reports the metadata write that Finalize asked for: err == nil
// completes checkpoint id, an error aborts it and counts as a failure.
//
// On completion of a checkpoint (not a savepoint): tasks are to be notified
// (Completed), pending checkpoints with lower ids other than savepoints are
// aborted as subsumed (not failures), the oldest completed checkpoints
// beyond Retained are to be discarded, and the consecutive-failure counter
// resets. A completed savepoint is only reported (Savepoints).
//
// A Finalized for an id that is not finalizing (it expired or was subsumed
// meanwhile) is ignored with a Note.
func (c *Coordinator) Finalized(now int64, id int64, err error) Output {
	var out Output
	now = c.advance(now, &out)
	p := c.find(id)
	switch {
	case p == nil:
		out.Notes = append(out.Notes, fmt.Sprintf("finalized %d ignored: %s", id, c.whyNotPending(id)))
	case !p.finalizing:
		out.Notes = append(out.Notes, fmt.Sprintf("finalized %d ignored: %d of %d tasks acknowledged, nothing to finalize", id, p.acked, len(p.ackTime)))
	case err != nil:
		c.abort(p, now, fmt.Sprintf("writing the metadata failed: %v", err), true, true, &out)
	default:
		c.complete(p, now, &out)
	}
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// Suspend stops checkpointing while the job restarts or ends: every pending
// checkpoint is aborted without notifying tasks (they are gone), queued
// requests are rejected, and nothing triggers until Resume.
func (c *Coordinator) Suspend(now int64) Output {
	var out Output
	now = c.advance(now, &out)
	if c.suspended {
		out.Notes = append(out.Notes, "suspend ignored: already suspended")
	} else {
		c.suspend(now, &out)
	}
	return c.finish(&out)
}

// Resume restarts checkpointing after Suspend with the restarted job's tasks
// and sources. Ids continue; the next periodic checkpoint is due at
// now + Interval. Resume without Suspend suspends first.
func (c *Coordinator) Resume(now int64, tasks int, sources []TaskID) Output {
	var out Output
	now = c.advance(now, &out)
	if !c.suspended {
		out.Notes = append(out.Notes, "resume without suspend: suspended first")
		c.suspend(now, &out)
	}
	c.setTasks(tasks, sources)
	c.suspended = false
	c.schedFrom = now
	if n := len(c.retained); n > 0 {
		c.counts.Restored++
		c.counts.LastRestored = c.retained[n-1]
	}
	c.triggerDue(now, &out)
	return c.finish(&out)
}

// advance brings the coordinator up to now, which it returns (never before
// an earlier event's time): checkpoints whose deadline has passed expire,
// each ending at its deadline, as Flink's canceller timer would have fired.
func (c *Coordinator) advance(now int64, out *Output) int64 {
	if now < c.now {
		now = c.now
	}
	c.now = now
	for len(c.pending) > 0 {
		p := c.pending[0] // deadlines grow with ids
		deadline := p.trigger + c.s.Timeout
		if deadline > now {
			break
		}
		c.abort(p, deadline, reasonExpired, true, true, out)
	}
	return now
}

// triggerDue triggers queued requests while slots are free, then a periodic
// checkpoint if one is due.
func (c *Coordinator) triggerDue(now int64, out *Output) {
	c.drainQueue(now, out)
	if !c.suspended && c.s.Interval > 0 && c.inFlight() < c.s.MaxConcurrent && now >= c.periodicDue() {
		c.schedFrom = now
		c.trigger(now, Periodic, out)
	}
}

// drainQueue triggers queued requests, oldest first, while slots are free.
func (c *Coordinator) drainQueue(now int64, out *Output) {
	for !c.suspended && len(c.queue) > 0 && c.inFlight() < c.s.MaxConcurrent {
		k := c.queue[0]
		c.queue = c.queue[1:]
		c.trigger(now, k, out)
	}
}

// periodicDue is when the next periodic checkpoint may trigger, slots allowing.
func (c *Coordinator) periodicDue() int64 {
	due := c.schedFrom + c.s.Interval
	if c.ended && c.lastEnd+c.s.MinPause > due {
		due = c.lastEnd + c.s.MinPause
	}
	return due
}

func (c *Coordinator) trigger(now int64, kind Kind, out *Output) {
	id := c.nextID
	c.nextID++
	p := &checkpoint{id: id, trigger: now, kind: kind, ackTime: make([]int64, c.tasks)}
	for i := range p.ackTime {
		p.ackTime[i] = -1
	}
	c.pending = append(c.pending, p)
	c.counts.Triggered++
	c.addHistory(HistoryEntry{ID: id, Kind: kind, Status: InProgress, TriggerTime: now,
		LatestAck: -1, EndTime: -1, Tasks: c.tasks})
	t := Trigger{ID: id, Timestamp: now, Kind: kind, Sources: c.sources, AtLeastOnce: c.s.Mode == AtLeastOnce}
	if c.s.Unaligned && kind != Savepoint {
		t.Unaligned, t.AlignedTimeout = true, c.s.AlignedTimeout
	}
	out.Trigger = append(out.Trigger, t)
}

// complete ends finalizing checkpoint p successfully at now.
func (c *Coordinator) complete(p *checkpoint, now int64, out *Output) {
	c.remove(p)
	c.lastEnd, c.ended = now, true
	c.counts.Completed++
	if h := c.historyEntry(p.id); h != nil {
		h.Status, h.EndTime = Completed, now
	}
	if p.kind == Savepoint {
		out.Savepoints = append(out.Savepoints, p.id)
		return
	}
	out.Completed = append(out.Completed, p.id)
	c.consecutive = 0
	for _, q := range slices.Clone(c.pending) {
		if q.id < p.id && q.kind != Savepoint {
			c.abort(q, now, fmt.Sprintf("checkpoint has been subsumed by %d", p.id), false, true, out)
		}
	}
	c.retained = append(c.retained, p.id)
	for len(c.retained) > c.s.Retained {
		old := c.retained[0]
		c.retained = c.retained[1:]
		out.Discard = append(out.Discard, old)
		if h := c.historyEntry(old); h != nil {
			h.Discarded = true
		}
	}
}

// abort ends pending checkpoint p at end without completing it. A counted
// failure of a checkpoint (not a savepoint) beyond TolerableFailures in a
// row fails the job, which suspends the coordinator.
func (c *Coordinator) abort(p *checkpoint, end int64, reason string, counted, notify bool, out *Output) {
	c.remove(p)
	c.lastEnd, c.ended = end, true
	c.counts.Failed++
	if h := c.historyEntry(p.id); h != nil {
		h.Status, h.EndTime, h.FailureReason = Failed, end, reason
	}
	out.Aborted = append(out.Aborted, Aborted{ID: p.id, Kind: p.kind, Reason: reason, NotifyTasks: notify})
	if !counted || p.kind == Savepoint {
		return
	}
	c.consecutive++
	if c.consecutive <= c.s.TolerableFailures {
		return
	}
	out.FailJob = fmt.Sprintf("exceeded checkpoint tolerable failure threshold: %d consecutive checkpoint failures, execution.checkpointing.tolerable-failed-checkpoints is %d; the latest, checkpoint %d, failed: %s",
		c.consecutive, c.s.TolerableFailures, p.id, reason)
	c.consecutive = 0 // as Flink's CheckpointFailureManager: the restarted job starts afresh
	c.suspend(end, out)
}

// suspend aborts everything pending without notifying tasks and rejects the
// queued requests.
func (c *Coordinator) suspend(now int64, out *Output) {
	c.suspended = true
	for len(c.pending) > 0 {
		c.abort(c.pending[0], now, reasonSuspending, false, false, out)
	}
	for _, k := range c.queue {
		out.Rejected = append(out.Rejected, Rejected{Kind: k, Reason: reasonSuspending})
	}
	c.queue = nil
}

// finish sets WakeAt: the earliest deadline of a pending checkpoint, and the
// next periodic trigger if a slot is free for it.
func (c *Coordinator) finish(out *Output) Output {
	var w int64
	at := func(t int64) {
		if w == 0 || t < w {
			w = t
		}
	}
	if len(c.pending) > 0 {
		at(c.pending[0].trigger + c.s.Timeout)
	}
	if !c.suspended && c.s.Interval > 0 && c.inFlight() < c.s.MaxConcurrent {
		at(c.periodicDue())
	}
	out.WakeAt = w
	return *out
}

func (c *Coordinator) inFlight() int {
	n := 0
	for _, p := range c.pending {
		if !p.finalizing {
			n++
		}
	}
	return n
}

func (c *Coordinator) find(id int64) *checkpoint {
	for _, p := range c.pending {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (c *Coordinator) remove(p *checkpoint) {
	i := slices.Index(c.pending, p)
	c.pending = slices.Delete(c.pending, i, i+1)
}

// whyNotPending explains, for a Note, why id is not pending.
func (c *Coordinator) whyNotPending(id int64) string {
	if id >= c.nextID || id < 1 {
		return "never triggered"
	}
	if h := c.historyEntry(id); h != nil {
		switch h.Status {
		case Completed:
			return "already completed"
		case Failed:
			return "already aborted (" + h.FailureReason + ")"
		}
	}
	return "no longer pending"
}
