package heartbeat

import (
	"fmt"
	"slices"
	"strings"
)

// Cause is why a Monitor gave a TaskManager up.
type Cause int

const (
	// Silence: no heartbeat for heartbeat.timeout.
	Silence Cause = iota + 1
	// SessionEnded: its session stream ended.
	SessionEnded
	// Deregistered: it said goodbye (SIGTERM).
	Deregistered
	// Replaced: it registered again under the same id; the old session ends.
	Replaced
	// ProtocolError: its heartbeat acknowledged less than an earlier one did,
	// which an ordered session cannot produce.
	ProtocolError
)

func (c Cause) String() string {
	switch c {
	case Silence:
		return "silence"
	case SessionEnded:
		return "session-ended"
	case Deregistered:
		return "deregistered"
	case Replaced:
		return "replaced"
	case ProtocolError:
		return "protocol-error"
	}
	return fmt.Sprintf("Cause(%d)", int(c))
}

// Loss is one TaskManager given up.
type Loss struct {
	Target string
	Cause  Cause
	// Reason names the TaskManager, the cause and, for silence, how long
	// ("TaskManager tm-2 (10.36.0.3) lost: no heartbeat for 5s
	// (heartbeat.timeout 5s)"). Every execution on it fails with this text.
	Reason string
	// At is when the loss was decided (the event's now).
	At int64
	// RedeployAt is the earliest time a next attempt of a job that ran on
	// the target may be deployed (decision 13). It is At when the
	// TaskManager certainly knows its session is over (it deregistered,
	// registered again, or closed the stream itself), and otherwise one
	// heartbeat.interval after the moment it has fenced itself at the
	// latest: it fences no later than lastHeard + heartbeat.timeout (see
	// Member), so RedeployAt = max(At, lastHeard + timeout) + interval.
	RedeployAt int64
}

// MonitorOutput is what the JobManager does after one event. The caller
// applies the fields in this order:
//
//  1. Lost, in slice order: end the target's session (close the stream, so
//     a TaskManager that still hears it fences at once), fail every
//     execution on it with Reason, release its slots and booked memory, and
//     deploy no next attempt of its jobs before RedeployAt.
//  2. Reply: send each target a HeartbeatReply (the allocations held
//     there, the last TaskManager seq processed) on its session.
//  3. WakeAt: call Tick at that time (epoch ms); 0 means no target is
//     monitored. Every output carries the current deadline.
type MonitorOutput struct {
	Lost   []Loss
	Reply  []string
	WakeAt int64
}

// target is one monitored TaskManager. Invariant: lastHeard >= registered,
// and its deadline is lastHeard + timeout.
type target struct {
	host       string
	registered int64
	lastHeard  int64  // registration time until its first heartbeat
	heartbeats int    // heartbeats received in this session
	processed  uint64 // the last JobManager seq its heartbeats acknowledged
}

// Monitor is the JobManager's side: it watches every registered TaskManager
// by its stable id. It is a pure state machine (see the package doc); not
// safe for concurrent use.
type Monitor struct {
	s       ms
	targets map[string]*target
	now     int64
}

// NewMonitor returns a Monitor of no targets. s must be valid (WithDefaults,
// then Validate); NewMonitor panics otherwise, a programmer error.
func NewMonitor(s Settings) *Monitor {
	return &Monitor{s: s.ms("heartbeat.NewMonitor"), targets: map[string]*target{}}
}

// Register starts monitoring id (a TaskManager's stable id; host, may be
// empty, only decorates loss reasons) at now, counting its silence from now.
// A registration under a monitored id replaces it: the old one is lost with
// cause Replaced (the TaskManager fenced itself before registering again).
func (m *Monitor) Register(now int64, id, host string) MonitorOutput {
	var o MonitorOutput
	now = m.catchUp(now, &o)
	if _, ok := m.targets[id]; ok {
		m.lose(&o, id, Replaced, "registered again", true)
	}
	m.targets[id] = &target{host: host, registered: now, lastHeard: now}
	return m.finish(o)
}

// Heartbeat records a heartbeat from id received at now; processed is the
// last JobManager message seq of the session it reflects. A heartbeat of a
// target not monitored (lost, in this call's catch-up too) is ignored: its
// session is over. A heartbeat exactly at the deadline comes too late: the
// deadline is handled first.
func (m *Monitor) Heartbeat(now int64, id string, processed uint64) MonitorOutput {
	var o MonitorOutput
	now = m.catchUp(now, &o)
	t, ok := m.targets[id]
	if !ok {
		return m.finish(o)
	}
	if t.heartbeats > 0 && processed < t.processed {
		m.lose(&o, id, ProtocolError, fmt.Sprintf("heartbeat acknowledged JobManager message %d after %d",
			processed, t.processed), false)
		return m.finish(o)
	}
	t.lastHeard, t.processed = now, processed
	t.heartbeats++
	o.Reply = append(o.Reply, id)
	return m.finish(o)
}

// SessionEnded reports that id's session stream ended at now, with cause
// the transport's text. peerClosed says the TaskManager's side closed it
// (EOF or a reset from its kernel: its process is gone or it closed the
// stream), so it knows; false (a local error or timeout, or the JobManager
// closing it) means it may not, and its slots wait as after a silent loss.
func (m *Monitor) SessionEnded(now int64, id, cause string, peerClosed bool) MonitorOutput {
	var o MonitorOutput
	m.catchUp(now, &o)
	if _, ok := m.targets[id]; ok {
		m.lose(&o, id, SessionEnded, "session ended ("+cause+")", peerClosed)
	}
	return m.finish(o)
}

// Deregister reports that id said goodbye at now (SIGTERM): it cancels its
// executions itself, so its slots may be used at once.
func (m *Monitor) Deregister(now int64, id string) MonitorOutput {
	var o MonitorOutput
	m.catchUp(now, &o)
	if _, ok := m.targets[id]; ok {
		m.lose(&o, id, Deregistered, "deregistered", true)
	}
	return m.finish(o)
}

// Tick declares lost every target silent for heartbeat.timeout at now.
func (m *Monitor) Tick(now int64) MonitorOutput {
	var o MonitorOutput
	m.catchUp(now, &o)
	return m.finish(o)
}

// catchUp takes now as the latest time seen (time never goes back) and
// loses every target whose deadline is at or before it, in deadline order
// then by id. It returns the effective now.
func (m *Monitor) catchUp(now int64, o *MonitorOutput) int64 {
	m.now = max(m.now, now)
	var due []string
	for id, t := range m.targets {
		if t.lastHeard+m.s.timeout <= m.now {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		if d := m.targets[a].lastHeard - m.targets[b].lastHeard; d != 0 {
			return int(min(max(d, -1), 1))
		}
		return strings.Compare(a, b)
	})
	for _, id := range due {
		silent := m.now - m.targets[id].lastHeard
		m.lose(o, id, Silence, fmt.Sprintf("no heartbeat for %s (heartbeat.timeout %s)",
			dur(silent), dur(m.s.timeout)), false)
	}
	return m.now
}

// lose removes id and appends its Loss; knows says the TaskManager knows its
// session is over.
func (m *Monitor) lose(o *MonitorOutput, id string, c Cause, what string, knows bool) {
	t := m.targets[id]
	delete(m.targets, id)
	name := "TaskManager " + id
	if t.host != "" {
		name += " (" + t.host + ")"
	}
	redeploy := m.now
	if !knows {
		redeploy = max(m.now, t.lastHeard+m.s.timeout) + m.s.interval
	}
	o.Lost = append(o.Lost, Loss{Target: id, Cause: c, Reason: name + " lost: " + what, At: m.now, RedeployAt: redeploy})
}

func (m *Monitor) finish(o MonitorOutput) MonitorOutput {
	for _, t := range m.targets {
		d := t.lastHeard + m.s.timeout
		if o.WakeAt == 0 || d < o.WakeAt {
			o.WakeAt = d
		}
	}
	return o
}

// Targets returns the monitored ids, sorted.
func (m *Monitor) Targets() []string {
	ids := make([]string, 0, len(m.targets))
	for id := range m.targets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TargetState is what the Monitor knows of one target, for the REST API.
type TargetState struct {
	Registered int64  // when it registered
	LastHeard  int64  // its last heartbeat (its registration before the first)
	Heartbeats int    // heartbeats in this session
	Processed  uint64 // the last JobManager seq its heartbeats acknowledged
	Deadline   int64  // when it is lost if silent until then
}

// Target returns what the Monitor knows of id, and whether it monitors it.
func (m *Monitor) Target(id string) (TargetState, bool) {
	t, ok := m.targets[id]
	if !ok {
		return TargetState{}, false
	}
	return TargetState{Registered: t.registered, LastHeard: t.lastHeard, Heartbeats: t.heartbeats,
		Processed: t.processed, Deadline: t.lastHeard + m.s.timeout}, true
}

// String prints the monitored targets, one a line, sorted by id.
func (m *Monitor) String() string {
	if len(m.targets) == 0 {
		return "no targets"
	}
	var b strings.Builder
	for i, id := range m.Targets() {
		if i > 0 {
			b.WriteByte('\n')
		}
		t := m.targets[id]
		fmt.Fprintf(&b, "%s last=%d heartbeats=%d processed=%d deadline=%d", id, t.lastHeard, t.heartbeats,
			t.processed, t.lastHeard+m.s.timeout)
	}
	return b.String()
}
