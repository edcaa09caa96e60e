package heartbeat

import (
	"fmt"
	"math/rand/v2"
)

// MemberOutput is what the TaskManager does after one event. The caller
// applies the fields in this order:
//
//  1. Fence (non-empty: the reason): cancel every execution, release its
//     partitions and allocations, and end the session if it is still open.
//     The Member is registering again.
//  2. GiveUp (non-nil): stop registering and exit 1 with this error; the
//     Member does nothing more.
//  3. Register: dial the JobManager and register now; report the outcome
//     with Registered or RegisterFailed.
//  4. Heartbeat: send a Heartbeat on the session now, then report the seq
//     it was sent with by HeartbeatSent.
//  5. WakeAt: call Tick at that time (epoch ms); 0 only once the Member
//     gave up. While an attempt is in flight it is the registration
//     timeout, so a hung attempt cannot outlast it.
type MemberOutput struct {
	Fence     string
	GiveUp    error
	Register  bool
	Heartbeat bool
	WakeAt    int64
}

type memberState int

const (
	idle        memberState = iota // before Start
	registering                    // an attempt in flight or waiting for nextAttempt
	registered                     // a session is open
	gaveUp
)

// sent is a heartbeat not yet acknowledged.
type sent struct {
	seq uint64
	at  int64
}

// Member is the TaskManager's side: registration with backoff, a heartbeat
// every heartbeat.interval, and fencing itself when it has lost the
// JobManager. It is a pure state machine (see the package doc); not safe
// for concurrent use.
//
// Its silence deadline counts from the send time of the latest heartbeat
// the JobManager acknowledged (HeartbeatReply's "last TaskManager seq
// processed"), or from the start of the registration attempt before the
// first acknowledgement: fenceAt = acked + heartbeat.timeout. Since the
// JobManager received that heartbeat after it was sent, and counts its own
// deadline from when it received the latest one, the Member fences no later
// than the JobManager declares it lost by silence (both measuring elapsed
// time on their own clocks). Messages from the JobManager other than
// replies do not count: over a link that is silent only towards the
// JobManager they would keep a TaskManager alive that the JobManager has
// already lost.
type Member struct {
	s     ms
	rng   *rand.Rand
	state memberState
	now   int64

	// registering
	attempting   bool  // an attempt is in flight (Register was output)
	attemptStart int64 // when the attempt in flight (or the last one) started
	nextAttempt  int64 // when the next attempt starts, if not attempting
	since        int64 // when this round of registering began
	failures     int   // consecutive failed attempts in this round
	lastFailure  string

	// registered
	epoch    uint64
	session  string
	nextBeat int64
	acked    int64  // send time of the latest acknowledged heartbeat
	pending  []sent // unacknowledged heartbeats, seq increasing, at most maxPending
	lastSeq  uint64 // the seq of the latest HeartbeatSent, 0 before any
	askedAt  int64  // when the latest Heartbeat was output
}

// NewMember returns a Member that has not started. s must be valid
// (WithDefaults, then Validate); NewMember panics otherwise. seed drives the
// backoff's jitter: the same seed and events give the same output.
func NewMember(s Settings, seed uint64) *Member {
	return &Member{s: s.ms("heartbeat.NewMember"), rng: rand.New(rand.NewPCG(seed, 0x6865617274626561))}
}

// maxPending bounds the unacknowledged heartbeats kept: more than
// timeout/interval + 2 cannot be outstanding before the Member fences, unless
// the caller reports heartbeats the Member did not ask for. Dropping the
// oldest only makes the deadline earlier (the safe side).
func (m *Member) maxPending() int { return int(m.s.timeout/m.s.interval) + 2 }

// Start begins registering at now.
func (m *Member) Start(now int64) MemberOutput {
	if m.state != idle {
		panic("heartbeat.Member.Start called twice")
	}
	var o MemberOutput
	m.now = now
	m.beginRegistering(&o)
	return m.finish(o)
}

// Registered reports that the attempt in flight succeeded at now with the
// session's leader epoch and session id: the first heartbeat goes at once.
func (m *Member) Registered(now int64, epoch uint64, session string) MemberOutput {
	m.mustAttempt("Registered")
	var o MemberOutput
	if m.catchUp(now, &o); m.state != registering {
		return m.finish(o)
	}
	m.attempting = false
	m.state, m.epoch, m.session = registered, epoch, session
	m.acked, m.pending, m.lastSeq = m.attemptStart, m.pending[:0], 0
	m.failures, m.lastFailure = 0, ""
	m.askHeartbeat(&o)
	return m.finish(o)
}

// RegisterFailed reports that the attempt in flight failed at now (dial
// error, Register refused for a reason retrying can cure, or its own
// timeout). The next attempt follows after the backoff, unless
// taskmanager.registration.timeout has passed.
func (m *Member) RegisterFailed(now int64, reason string) MemberOutput {
	m.mustAttempt("RegisterFailed")
	var o MemberOutput
	if m.catchUp(now, &o); m.state != registering {
		return m.finish(o)
	}
	m.attempting = false
	m.failures++
	m.lastFailure = reason
	m.nextAttempt = m.now + m.backoff(m.failures)
	m.checkGiveUp(&o)
	return m.finish(o)
}

// HeartbeatSent reports that the heartbeat asked for was sent as the
// session's message seq. Seqs must increase. Its send time is taken as the
// time of the output that asked for it, which is no later than the actual
// send, so a slow caller can only make the silence deadline earlier.
func (m *Member) HeartbeatSent(now int64, seq uint64) MemberOutput {
	var o MemberOutput
	if m.catchUp(now, &o); m.state != registered {
		return m.finish(o)
	}
	if seq <= m.lastSeq {
		panic(fmt.Sprintf("heartbeat.Member.HeartbeatSent: seq %d after %d", seq, m.lastSeq))
	}
	m.lastSeq = seq
	if len(m.pending) == m.maxPending() {
		m.pending = append(m.pending[:0], m.pending[1:]...)
	}
	m.pending = append(m.pending, sent{seq: seq, at: m.askedAt})
	return m.finish(o)
}

// Reply reports a HeartbeatReply received at now that acknowledges the
// TaskManager's messages up to seq acked: the silence deadline moves to the
// send time of the latest heartbeat it covers plus heartbeat.timeout.
func (m *Member) Reply(now int64, acked uint64) MemberOutput {
	var o MemberOutput
	if m.catchUp(now, &o); m.state != registered {
		return m.finish(o)
	}
	n := 0
	for n < len(m.pending) && m.pending[n].seq <= acked {
		m.acked = max(m.acked, m.pending[n].at)
		n++
	}
	m.pending = append(m.pending[:0], m.pending[n:]...)
	return m.finish(o)
}

// SessionEnded reports that the session stream ended at now, for cause.
// The Member fences at once and registers again: a session is never resumed
// (decision 12), and the JobManager redeploys at once when it sees the
// stream closed, so nothing the old session ran may go on.
func (m *Member) SessionEnded(now int64, cause string) MemberOutput {
	var o MemberOutput
	if m.catchUp(now, &o); m.state != registered {
		return m.finish(o)
	}
	m.fence(&o, "session with the JobManager ended ("+cause+")")
	return m.finish(o)
}

// Tick handles what is due at now: the silence deadline (fence), the next
// heartbeat, the next registration attempt, the registration timeout.
func (m *Member) Tick(now int64) MemberOutput {
	var o MemberOutput
	m.catchUp(now, &o)
	return m.finish(o)
}

// catchUp takes now as the latest time seen and does what is due by then.
func (m *Member) catchUp(now int64, o *MemberOutput) {
	m.now = max(m.now, now)
	switch m.state {
	case registered:
		if m.now >= m.acked+m.s.timeout {
			m.fence(o, fmt.Sprintf("no heartbeat reply from the JobManager for %s (heartbeat.timeout %s)",
				dur(m.now-m.acked), dur(m.s.timeout)))
			return
		}
		if m.now >= m.nextBeat {
			m.askHeartbeat(o)
		}
	case registering:
		if m.checkGiveUp(o) {
			return
		}
		if !m.attempting && m.now >= m.nextAttempt {
			m.attempt(o)
		}
	}
}

func (m *Member) askHeartbeat(o *MemberOutput) {
	o.Heartbeat, m.askedAt, m.nextBeat = true, m.now, m.now+m.s.interval
}

func (m *Member) fence(o *MemberOutput, reason string) {
	o.Fence = reason
	m.session, m.epoch = "", 0
	m.pending = m.pending[:0]
	m.beginRegistering(o)
}

func (m *Member) beginRegistering(o *MemberOutput) {
	m.state, m.since, m.failures, m.lastFailure = registering, m.now, 0, ""
	m.attempt(o)
}

func (m *Member) attempt(o *MemberOutput) {
	m.attempting, m.attemptStart = true, m.now
	o.Register = true
}

func (m *Member) checkGiveUp(o *MemberOutput) bool {
	if m.now < m.since+m.s.registrationTimeout {
		return false
	}
	last := ""
	if m.lastFailure != "" {
		last = "; last attempt: " + m.lastFailure
	}
	o.GiveUp = fmt.Errorf("not registered with the JobManager within taskmanager.registration.timeout (%s) "+
		"after %d failed attempts%s", dur(m.s.registrationTimeout), m.failures, last)
	o.Register = false
	m.state, m.attempting = gaveUp, false
	return true
}

// backoff is the pause after the n-th consecutive failure: base =
// initial × 2^(n-1), at most max, then a jitter drawn uniformly from
// [base/2, base] so TaskManagers that lost one JobManager together do not
// retry in step.
func (m *Member) backoff(n int) int64 {
	base := m.s.initialBackoff
	for i := 1; i < n && base < m.s.maxBackoff; i++ {
		base *= 2
	}
	base = min(base, m.s.maxBackoff)
	half := base / 2
	return half + m.rng.Int64N(base-half+1)
}

// mustAttempt panics when an attempt's outcome is reported while none is in
// flight: a programmer error. After GiveUp a late outcome is ignored.
func (m *Member) mustAttempt(event string) {
	if m.state == idle || m.state == registered || (m.state == registering && !m.attempting) {
		panic("heartbeat.Member." + event + " without an attempt in flight (Register was not output)")
	}
}

func (m *Member) finish(o MemberOutput) MemberOutput {
	switch m.state {
	case registered:
		o.WakeAt = min(m.nextBeat, m.acked+m.s.timeout)
	case registering:
		o.WakeAt = m.since + m.s.registrationTimeout
		if !m.attempting {
			o.WakeAt = min(o.WakeAt, m.nextAttempt)
		}
	}
	return o
}

// Session reports whether a session is open, with its epoch and id.
func (m *Member) Session() (epoch uint64, session string, ok bool) {
	return m.epoch, m.session, m.state == registered
}

// String prints the Member's state on one line.
func (m *Member) String() string {
	switch m.state {
	case idle:
		return "idle"
	case registering:
		s := fmt.Sprintf("registering since=%d failures=%d", m.since, m.failures)
		if m.attempting {
			return s + fmt.Sprintf(" attempt-started=%d", m.attemptStart)
		}
		return s + fmt.Sprintf(" next-attempt=%d", m.nextAttempt)
	case registered:
		seqs := make([]uint64, len(m.pending))
		for i, p := range m.pending {
			seqs[i] = p.seq
		}
		return fmt.Sprintf("registered epoch=%d session=%s next-heartbeat=%d acked=%d fence-at=%d unacked=%v",
			m.epoch, m.session, m.nextBeat, m.acked, m.acked+m.s.timeout, seqs)
	}
	return "gave up"
}
