package heartbeat

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

func trials() int {
	if testing.Short() {
		return 50
	}
	return 400
}

func randomSettings(rng *rand.Rand) Settings {
	interval := time.Duration(1+rng.IntN(200)) * time.Millisecond
	timeout := interval + time.Duration(1+rng.IntN(1000))*time.Millisecond
	return Settings{Interval: interval, Timeout: timeout, InitialBackoff: time.Duration(1+rng.IntN(50)) * time.Millisecond,
		MaxBackoff: time.Duration(50+rng.IntN(500)) * time.Millisecond, RegistrationTimeout: time.Hour}.WithDefaults()
}

// TestMonitorKeepsPunctualTargets: targets that heartbeat every interval,
// each heartbeat late by a jitter below timeout - interval, are never lost,
// whenever the ticks come.
func TestMonitorKeepsPunctualTargets(t *testing.T) {
	rng := testseed.Rand(t, 4)
	for trial := range trials() {
		s := randomSettings(rng)
		iv, to := s.Interval.Milliseconds(), s.Timeout.Milliseconds()
		m := NewMonitor(s)
		n := 1 + rng.IntN(4)
		// next heartbeat per target: k*interval + jitter, jitter in [0, timeout-interval)
		next, k := make([]int64, n), make([]int64, n)
		for i := range n {
			m.Register(0, fmt.Sprint("tm-", i), "")
			k[i] = 1
			next[i] = iv + rng.Int64N(to-iv)
		}
		tick := rng.Int64N(2 * to)
		for now := int64(0); now < 50*to; {
			i := 0
			for j := range n {
				if next[j] < next[i] {
					i = j
				}
			}
			var o MonitorOutput
			if tick < next[i] {
				now = tick
				o = m.Tick(now)
				tick = now + 1 + rng.Int64N(2*to)
			} else {
				now = next[i]
				o = m.Heartbeat(now, fmt.Sprint("tm-", i), uint64(k[i]))
				k[i]++
				next[i] = k[i]*iv + rng.Int64N(to-iv)
			}
			if len(o.Lost) > 0 {
				t.Fatalf("trial %d, %+v: punctual target lost at %d: %+v", trial, s, now, o.Lost)
			}
		}
	}
}

// TestMonitorLosesSilentTargets: a target silent from some heartbeat on is
// lost at the first tick at or after its deadline, so within one tick
// period of it, by silence, once; a punctual target beside it stays.
func TestMonitorLosesSilentTargets(t *testing.T) {
	rng := testseed.Rand(t, 5)
	for trial := range trials() {
		s := randomSettings(rng)
		iv, to := s.Interval.Milliseconds(), s.Timeout.Milliseconds()
		period := 1 + rng.Int64N(2*iv) // the tick period
		m := NewMonitor(s)
		m.Register(0, "silent", "")
		m.Register(0, "punctual", "")
		stopAfter := rng.Int64N(10) // heartbeats the silent one sends
		last := int64(0)
		var lost []Loss
		for now, beat := period, int64(1); now < 30*to; now += period {
			for ; beat*iv <= now; beat++ {
				lost = append(lost, m.Heartbeat(beat*iv, "punctual", uint64(beat)).Lost...)
				if beat <= stopAfter {
					last = beat * iv
					lost = append(lost, m.Heartbeat(beat*iv, "silent", uint64(beat)).Lost...)
				}
			}
			lost = append(lost, m.Tick(now).Lost...)
		}
		deadline := last + to
		if len(lost) != 1 || lost[0].Target != "silent" || lost[0].Cause != Silence {
			t.Fatalf("trial %d, %+v, tick every %d ms: losses %+v, want silent once", trial, s, period, lost)
		}
		if l := lost[0]; l.At < deadline || l.At >= deadline+period || l.RedeployAt != l.At+iv {
			t.Fatalf("trial %d, %+v, tick every %d ms: deadline %d, lost at %d redeploy at %d",
				trial, s, period, deadline, l.At, l.RedeployAt)
		}
	}
}

// TestMemberBackoff: after the n-th consecutive failure the pause is in
// [base/2, base] with base = initial × 2^(n-1) capped at max, and the same
// seed gives the same pauses.
func TestMemberBackoff(t *testing.T) {
	rng := testseed.Rand(t, 6)
	for trial := range trials() {
		s := randomSettings(rng)
		seed := rng.Uint64()
		a, b := NewMember(s, seed), NewMember(s, seed)
		now := int64(0)
		a.Start(now)
		b.Start(now)
		base := s.InitialBackoff.Milliseconds()
		for n := 1; n <= 20; n++ {
			oa, ob := a.RegisterFailed(now, "refused"), b.RegisterFailed(now, "refused")
			pause := oa.WakeAt - now
			if oa != ob {
				t.Fatalf("trial %d: same seed, outputs %+v and %+v", trial, oa, ob)
			}
			if pause < base/2 || pause > base {
				t.Fatalf("trial %d, %+v: failure %d paused %d ms, want [%d, %d]", trial, s, n, pause, base/2, base)
			}
			base = min(2*base, s.MaxBackoff.Milliseconds())
			now = oa.WakeAt
			if o := a.Tick(now); !o.Register {
				t.Fatalf("trial %d: no attempt at %d: %+v", trial, now, o)
			}
			b.Tick(now)
		}
	}
}

// TestMemberAndMonitor joins a Member and a Monitor by a simulated session
// with random delays and, in half the runs, one-way or two-way silences,
// and checks decision 13's premise: a TaskManager has fenced a session no
// later than the JobManager loses it by silence. Without silences and with
// delays below (timeout - interval)/4, nothing is ever lost or fenced.
func TestMemberAndMonitor(t *testing.T) {
	rng := testseed.Rand(t, 7)
	for trial := range trials() {
		simulate(t, rng, trial)
	}
}

type simEvent struct {
	at, order int64
	do        func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].order < q[j].order)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type sim struct {
	t     *testing.T
	rng   *rand.Rand
	q     simQueue
	order int64
	now   int64
	where string

	maxDelay int64
	down     [2][][2]int64 // per direction (0: TaskManager to JobManager), silent windows
	last     [2]int64      // last arrival per direction: sessions keep order

	mon        *Monitor
	mem        *Member
	jmSession  int // the JobManager's session with the TaskManager, 0 none
	tmSession  int
	sessions   int
	tmSeq      uint64 // the TaskManager's last seq in its session
	jmSeq      uint64 // the JobManager's last seq in its session
	jmAcked    uint64 // the last TaskManager seq the JobManager processed
	fencedAt   map[int]int64
	had        map[int]bool // sessions the TaskManager opened
	monWake    int64
	memWake    int64
	lossCount  int
	fenceCount int
}

func (s *sim) at(t int64, f func()) {
	s.order++
	heap.Push(&s.q, simEvent{at: t, order: s.order, do: f})
}

// send delivers f after a random delay unless the direction is silent now;
// arrivals keep the order of sends.
func (s *sim) send(dir int, f func()) {
	for _, w := range s.down[dir] {
		if s.now >= w[0] && s.now < w[1] {
			return
		}
	}
	arrive := max(s.now+s.rng.Int64N(s.maxDelay+1), s.last[dir])
	s.last[dir] = arrive
	s.at(arrive, f)
}

func (s *sim) monitor(o MonitorOutput) {
	for _, l := range o.Lost {
		s.lossCount++
		sess := s.jmSession
		s.jmSession = 0
		if l.Cause == Silence {
			// A session whose registration reply never reached the
			// TaskManager ran nothing.
			// At the same millisecond, the Member's tick may come next.
			f, ok := s.fencedAt[sess]
			due := s.tmSession == sess && s.mem.acked+s.mem.s.timeout <= l.At
			if s.had[sess] && !due && (!ok || f > l.At) {
				s.t.Fatalf("%s: session %d lost by silence at %d, fenced at %d (ok %t), member %s",
					s.where, sess, l.At, f, ok, s.mem)
			}
		}
		s.send(1, func() { // the JobManager closes the stream
			if s.tmSession == sess {
				s.member(s.mem.SessionEnded(s.now, "closed by the JobManager"))
			}
		})
	}
	for range o.Reply {
		sess, acked := s.jmSession, s.jmAcked
		s.jmSeq++
		s.send(1, func() {
			if s.tmSession == sess {
				s.member(s.mem.Reply(s.now, acked))
			}
		})
	}
	if o.WakeAt != 0 && o.WakeAt != s.monWake {
		s.monWake = o.WakeAt
		s.at(o.WakeAt, func() { s.monitor(s.mon.Tick(s.now)) })
	}
}

func (s *sim) member(o MemberOutput) {
	if o.Fence != "" {
		s.fenceCount++
		sess := s.tmSession
		s.fencedAt[sess] = s.now
		s.tmSession = 0
		s.send(0, func() {
			if s.jmSession == sess {
				s.monitor(s.mon.SessionEnded(s.now, "tm-1", "EOF", true))
			}
		})
	}
	if o.GiveUp != nil {
		s.t.Fatalf("%s: gave up: %v", s.where, o.GiveUp)
	}
	if o.Register {
		started := s.now
		answered := false
		s.send(0, func() {
			s.sessions++
			sess := s.sessions
			s.jmSession, s.jmSeq, s.jmAcked = sess, 0, 0
			s.monitor(s.mon.Register(s.now, "tm-1", ""))
			s.send(1, func() {
				if !answered {
					answered = true
					s.tmSession, s.tmSeq, s.had[sess] = sess, 0, true
					s.member(s.mem.Registered(s.now, 1, fmt.Sprint("s", sess)))
				}
			})
		})
		s.at(started+4*s.maxDelay+1, func() { // the attempt's own timeout
			if !answered {
				answered = true
				s.member(s.mem.RegisterFailed(s.now, "timed out"))
			}
		})
	}
	if o.Heartbeat {
		s.tmSeq++
		seq, sess := s.tmSeq, s.tmSession
		s.member(s.mem.HeartbeatSent(s.now, seq))
		s.send(0, func() {
			if s.jmSession == sess {
				s.jmAcked = seq
				s.monitor(s.mon.Heartbeat(s.now, "tm-1", s.jmSeq))
			}
		})
	}
	if o.WakeAt != 0 && o.WakeAt != s.memWake {
		s.memWake = o.WakeAt
		s.at(o.WakeAt, func() { s.member(s.mem.Tick(s.now)) })
	}
}

func simulate(t *testing.T, rng *rand.Rand, trial int) {
	st := randomSettings(rng)
	iv, to := st.Interval.Milliseconds(), st.Timeout.Milliseconds()
	s := &sim{t: t, rng: rng, mon: NewMonitor(st), mem: NewMember(st, rng.Uint64()), fencedAt: map[int]int64{}, had: map[int]bool{}}
	s.maxDelay = max(0, (to-iv)/4-1)
	silences := rng.IntN(2) == 0
	if silences {
		s.maxDelay = rng.Int64N(to)
		for range 1 + rng.IntN(4) {
			from := rng.Int64N(40 * to)
			w := [2]int64{from, from + rng.Int64N(3*to)}
			switch rng.IntN(3) {
			case 0, 1:
				d := rng.IntN(2)
				s.down[d] = append(s.down[d], w)
			default:
				s.down[0], s.down[1] = append(s.down[0], w), append(s.down[1], w)
			}
		}
	}
	s.where = fmt.Sprintf("trial %d, %+v, max delay %d, silences %v", trial, st, s.maxDelay, s.down)
	s.at(0, func() { s.member(s.mem.Start(0)) })
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(simEvent)
		if e.at > 50*to {
			break
		}
		s.now = e.at
		e.do()
	}
	if !silences && (s.lossCount > 0 || s.fenceCount > 0) {
		t.Fatalf("%s: healthy link, yet %d losses and %d fences", s.where, s.lossCount, s.fenceCount)
	}
}
