package coordinator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// TestQuick drives the Coordinator with random event sequences, in the style
// of etcd-raft's quorum/quick_test.go, and checks every Output two ways:
// against refModel, a deliberately simple model of the same rules (maps,
// full scans, no incremental bookkeeping), and against invariants the test
// derives from the events alone (acks it sent, Finalized calls it made,
// failures it counted itself). Rerun a failure with WEIR_SEED.
func TestQuick(t *testing.T) {
	rng := testseed.Rand(t, 1)
	cases, steps := 300, 400
	if testing.Short() {
		cases = 50
	}
	for i := range cases {
		h := newQuickHarness(t, rng, i)
		for range steps {
			h.step()
		}
	}
}

func randomSettings(rng *rand.Rand) Settings {
	pick := func(vs ...int64) int64 { return vs[rng.IntN(len(vs))] }
	s := Settings{
		Interval:          pick(0, 10, 30, 50, 100, 250),
		Timeout:           pick(10, 40, 100, 300, 1000),
		MinPause:          pick(0, 0, 20, 100),
		MaxConcurrent:     1 + rng.IntN(3),
		TolerableFailures: rng.IntN(4),
		Retained:          1 + rng.IntN(3),
		HistorySize:       1 + rng.IntN(5),
		Unaligned:         rng.IntN(2) == 0,
		AlignedTimeout:    pick(0, 50),
	}
	if !s.Unaligned && rng.IntN(2) == 0 {
		s.Mode = AtLeastOnce
	}
	return s
}

type quickHarness struct {
	t    *testing.T
	rng  *rand.Rand
	name string
	s    Settings
	c    *Coordinator
	ref  *refModel
	now  int64

	tasks int
	log   []string // the events so far, for the failure message

	// What the test knows from its own calls and the outputs.
	lastTrigger   int64                     // highest id triggered
	lastCompleted int64                     // highest checkpoint id completed
	taskCount     map[int64]int             // tasks of each triggered checkpoint
	acked         map[int64]map[TaskID]bool // acks the test sent, per id
	finalizing    map[int64]bool            // Finalize output, not ended since
	kinds         map[int64]Kind            // kind of each triggered id
	failures      int                       // consecutive counted failures, counted here
	wake          int64                     // WakeAt of the latest Output

	weights [evCount]int // how often each kind of event comes, per case
}

const (
	evTick = iota
	evAck
	evDecline
	evFinalized
	evTrigger
	evSuspend
	evResume
	evCount
)

// pickEvent picks an event kind by the case's weights.
func (h *quickHarness) pickEvent() int {
	total := 0
	for _, w := range h.weights {
		total += w
	}
	r := h.rng.IntN(total)
	for ev, w := range h.weights {
		if r < w {
			return ev
		}
		r -= w
	}
	panic("unreachable")
}

func newQuickHarness(t *testing.T, rng *rand.Rand, n int) *quickHarness {
	s := randomSettings(rng)
	tasks := 1 + rng.IntN(4)
	next := int64(1 + rng.IntN(3)*10)
	now := int64(rng.IntN(1000))
	h := &quickHarness{
		t: t, rng: rng, s: s, tasks: tasks, now: now,
		name:        fmt.Sprintf("case %d: %+v tasks=%d next=%d start=%d", n, s, tasks, next, now),
		c:           New(s, tasks, []TaskID{0}, next, now),
		ref:         newRefModel(s.WithDefaults(), tasks, next, now),
		lastTrigger: next - 1,
		taskCount:   map[int64]int{}, acked: map[int64]map[TaskID]bool{},
		finalizing: map[int64]bool{}, kinds: map[int64]Kind{},
	}
	// Mostly a steady mix; some cases are stormier (many requests, declines,
	// restarts), to reach the queue limit and long failure streaks.
	h.weights = [evCount]int{25, 30, 8, 17, 10, 4, 6}
	switch rng.IntN(6) {
	case 0, 1:
		for i := range h.weights {
			h.weights[i] = rng.IntN(30)
		}
		h.weights[evTick]++
	case 2: // a flood of requests fills the queue
		h.weights = [evCount]int{5, 3, 1, 1, 50, 0, 1}
	}
	// As a driver does: a Tick right after New gives the first WakeAt.
	out, rout := h.c.Tick(now), h.ref.tick(now)
	if got, want := normalize(out), rout.String(); got != want || out.HasActions() {
		h.fatalf("first tick: %s, reference %s", got, want)
	}
	h.wake = out.WakeAt
	return h
}

func (h *quickHarness) fatalf(format string, args ...any) {
	h.t.Helper()
	tail := h.log[max(0, len(h.log)-25):]
	h.t.Fatalf("%s\nlast events:\n  %s\n%s", h.name, strings.Join(tail, "\n  "), fmt.Sprintf(format, args...))
}

// step makes one random event and checks its Output.
func (h *quickHarness) step() {
	h.t.Helper()
	rng := h.rng
	switch r := rng.IntN(20); {
	case r < 2:
		h.now -= int64(rng.IntN(20)) // the clock steps back
	case r < 14:
		h.now += int64(rng.IntN(60))
	default:
		h.now += int64(rng.IntN(600))
	}
	pending := h.c.Pending()
	pickPending := func(finalizing bool) (int64, bool) {
		var ids []int64
		for _, p := range pending {
			if p.Finalizing == finalizing {
				ids = append(ids, p.ID)
			}
		}
		if len(ids) == 0 {
			return 0, false
		}
		return ids[rng.IntN(len(ids))], true
	}
	randomID := func() int64 { return 1 + rng.Int64N(h.lastTrigger+2) }
	randomTask := func() TaskID { return TaskID(rng.IntN(h.tasks + 1)) } // sometimes out of range

	var (
		ev      string
		out     Output
		rout    refOut
		isTick  bool
		evID    int64 = -1
		counted bool  // the event's own abort counts (decline counts, finalize error)
		okFinal bool  // a Finalized without error
	)
	switch r := h.pickEvent(); {
	case r == evTick:
		if h.wake != 0 && h.wake > h.now && rng.IntN(2) == 0 {
			h.now = h.wake
		}
		ev, isTick = fmt.Sprintf("tick %d", h.now), true
		out, rout = h.c.Tick(h.now), h.ref.tick(h.now)
	case r == evAck:
		id, ok := pickPending(false)
		if !ok || rng.IntN(10) == 0 {
			id = randomID()
		}
		task := randomTask()
		if rng.IntN(4) > 0 && int(task) < h.tasks { // mostly acks that count
			for tk := range TaskID(h.tasks) {
				if !h.acked[id][tk] {
					task = tk
					break
				}
			}
		}
		ev = fmt.Sprintf("ack %d id=%d task=%d", h.now, id, task)
		if h.acked[id] == nil {
			h.acked[id] = map[TaskID]bool{}
		}
		h.acked[id][task] = true
		evID = id
		out, rout = h.c.Ack(h.now, id, task), h.ref.ack(h.now, id, task)
	case r == evDecline:
		id, ok := pickPending(false)
		if !ok || rng.IntN(5) == 0 {
			id = randomID()
		}
		task, counts := randomTask(), rng.IntN(2) == 0
		ev = fmt.Sprintf("decline %d id=%d task=%d counts=%t", h.now, id, task, counts)
		evID, counted = id, counts
		out, rout = h.c.Decline(h.now, id, task, "random", counts), h.ref.decline(h.now, id, task, counts)
	case r == evFinalized:
		id, ok := pickPending(true)
		if !ok || rng.IntN(10) == 0 {
			id = randomID()
		}
		var err error
		if rng.IntN(4) == 0 {
			err = errors.New("write failed")
		}
		ev = fmt.Sprintf("finalized %d id=%d err=%v", h.now, id, err)
		evID, counted, okFinal = id, err != nil, err == nil
		out, rout = h.c.Finalized(h.now, id, err), h.ref.finalized(h.now, id, err)
	case r == evTrigger:
		kind := Final
		if rng.IntN(2) == 0 {
			kind = Savepoint
		}
		ev = fmt.Sprintf("trigger %d kind=%s", h.now, kind)
		out, rout = h.c.TriggerNow(h.now, kind), h.ref.triggerNow(h.now, kind)
	case r == evSuspend:
		ev = fmt.Sprintf("suspend %d", h.now)
		out, rout = h.c.Suspend(h.now), h.ref.suspend(h.now)
	default:
		if rng.IntN(3) == 0 {
			h.tasks = 1 + rng.IntN(4)
		}
		ev = fmt.Sprintf("resume %d tasks=%d", h.now, h.tasks)
		out, rout = h.c.Resume(h.now, h.tasks, []TaskID{0}), h.ref.resume(h.now, h.tasks)
	}
	h.log = append(h.log, ev)

	// 1. The same decisions as the reference model.
	if got, want := normalize(out), rout.String(); got != want {
		h.fatalf("output differs from the reference model\ngot:  %s\nwant: %s", got, want)
	}

	// 2. Invariants from the events alone.
	if isTick && h.wake != 0 && h.now < h.wake && out.HasActions() {
		h.fatalf("tick before WakeAt %d did something: %s", h.wake, normalize(out))
	}
	if isTick && h.wake == 0 && out.HasActions() {
		h.fatalf("tick with no WakeAt did something: %s", normalize(out))
	}
	if isTick && h.now == h.wake && h.wake != 0 && !out.HasActions() {
		h.fatalf("tick at WakeAt %d did nothing", h.wake)
	}
	if out.WakeAt != 0 && out.WakeAt <= h.c.now {
		h.fatalf("WakeAt %d not after now %d", out.WakeAt, h.c.now)
	}
	h.wake = out.WakeAt

	seen := map[int64]bool{}
	for _, ids := range [][]int64{out.Completed, out.Savepoints, out.Discard, out.Finalize} {
		for _, id := range ids {
			if seen[id] {
				h.fatalf("id %d twice in one output", id)
			}
			seen[id] = true
		}
	}
	for _, a := range out.Aborted {
		if seen[a.ID] {
			h.fatalf("id %d twice in one output", a.ID)
		}
		seen[a.ID] = true
	}
	for _, tr := range out.Trigger {
		if seen[tr.ID] {
			h.fatalf("id %d twice in one output", tr.ID)
		}
		if tr.ID <= h.lastTrigger {
			h.fatalf("trigger %d after %d: ids must increase", tr.ID, h.lastTrigger)
		}
		if tr.Unaligned != (h.s.Unaligned && tr.Kind != Savepoint) {
			h.fatalf("trigger %d %s unaligned=%t with settings unaligned=%t", tr.ID, tr.Kind, tr.Unaligned, h.s.Unaligned)
		}
		if tr.AtLeastOnce != (h.s.Mode == AtLeastOnce) {
			h.fatalf("trigger %d at-least-once=%t with mode %s", tr.ID, tr.AtLeastOnce, h.s.Mode)
		}
		h.lastTrigger = tr.ID
		h.taskCount[tr.ID] = h.tasks
		h.kinds[tr.ID] = tr.Kind
	}
	for _, id := range out.Finalize {
		if id != evID || !strings.HasPrefix(ev, "ack") {
			h.fatalf("finalize %d on %q", id, ev)
		}
		for tk := range TaskID(h.taskCount[id]) {
			if !h.acked[id][tk] {
				h.fatalf("finalize %d: task %d never acknowledged it", id, tk)
			}
		}
		h.finalizing[id] = true
	}
	done := append(slices.Clone(out.Completed), out.Savepoints...)
	if len(done) > 1 {
		h.fatalf("%d checkpoints completed by one event", len(done))
	}
	for _, id := range done {
		if id != evID || !okFinal || !h.finalizing[id] {
			h.fatalf("completed %d on %q (finalizing: %t)", id, ev, h.finalizing[id])
		}
		delete(h.finalizing, id)
	}
	for _, id := range out.Savepoints {
		if h.kinds[id] != Savepoint {
			h.fatalf("savepoint done %d is a %s", id, h.kinds[id])
		}
	}
	for _, id := range out.Completed {
		if h.kinds[id] == Savepoint {
			h.fatalf("completed %d is a savepoint", id)
		}
		if id <= h.lastCompleted {
			h.fatalf("completed %d after %d", id, h.lastCompleted)
		}
		h.lastCompleted = id
	}
	// The failure counter, counted here from the reasons: expiries count, the
	// event's own abort counts when the event says so, savepoints never.
	failed := false
	for _, a := range out.Aborted {
		delete(h.finalizing, a.ID)
		if failed && a.NotifyTasks {
			h.fatalf("abort %d after the job failed tells the tasks", a.ID)
		}
		c := a.Kind != Savepoint && a.NotifyTasks &&
			(a.Reason == reasonExpired || (a.ID == evID && counted))
		if !c {
			continue
		}
		h.failures++
		if h.failures > h.s.TolerableFailures {
			failed, h.failures = true, 0
		}
	}
	if len(out.Completed) > 0 {
		h.failures = 0
	}
	if failed != (out.FailJob != "") {
		h.fatalf("job failure: the test counted failed=%t, output says %q", failed, out.FailJob)
	}
	if n := h.c.Stats().ConsecutiveFailures; n != h.failures {
		h.fatalf("%d consecutive failures, the test counted %d", n, h.failures)
	}

	inFlight := 0
	for _, p := range h.c.Pending() {
		if !p.Finalizing {
			inFlight++
		}
	}
	if inFlight > h.c.s.MaxConcurrent {
		h.fatalf("%d in flight, max %d", inFlight, h.c.s.MaxConcurrent)
	}
	ret := h.c.Retained()
	if len(ret) > h.c.s.Retained || (h.lastCompleted != 0 && (len(ret) == 0 || ret[len(ret)-1] != h.lastCompleted)) {
		h.fatalf("retained %v (max %d), last completed %d", ret, h.c.s.Retained, h.lastCompleted)
	}
	if h.c.LatestCompleted() != h.lastCompleted {
		h.fatalf("latest completed %d, want %d", h.c.LatestCompleted(), h.lastCompleted)
	}
	if err := h.c.checkInvariants(); err != nil {
		h.fatalf("invariant broken: %v", err)
	}
	if got, want := pendingString(h.c.Pending()), h.ref.pendingString(); got != want {
		h.fatalf("pending %s, reference %s", got, want)
	}
}

// normalize prints the decisions of an Output that the reference models.
func normalize(o Output) string {
	var r refOut
	r.completed, r.savepoints, r.discard, r.finalize = o.Completed, o.Savepoints, o.Discard, o.Finalize
	for _, a := range o.Aborted {
		r.aborted = append(r.aborted, fmt.Sprintf("%d/%s/%t/%s", a.ID, a.Kind, a.NotifyTasks, a.Reason))
	}
	for _, x := range o.Rejected {
		r.rejected = append(r.rejected, x.Kind)
	}
	for _, tr := range o.Trigger {
		r.trigger = append(r.trigger, fmt.Sprintf("%d/%s@%d", tr.ID, tr.Kind, tr.Timestamp))
	}
	r.failJob, r.wake = o.FailJob != "", o.WakeAt
	return r.String()
}

func pendingString(ps []PendingInfo) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d:%d/%d:%t ", p.ID, p.Acked, p.Tasks, p.Finalizing)
	}
	return b.String()
}

// refModel is the reference: the coordinator's rules written as directly as
// possible, with no concern for speed.
type refModel struct {
	s         Settings
	tasks     int
	next      int64
	now       int64
	live      map[int64]*refCP // triggered, not ended
	queue     []Kind
	suspended bool
	schedFrom int64
	lastEnd   int64
	ended     bool
	fails     int
	retained  []int64
}

type refCP struct {
	kind  Kind
	trig  int64
	tasks int
	acked map[TaskID]bool
}

func (cp *refCP) allAcked() bool { return len(cp.acked) == cp.tasks }

type refOut struct {
	completed, savepoints, discard, finalize []int64
	aborted, trigger                         []string
	rejected                                 []Kind
	failJob                                  bool
	wake                                     int64
}

func (r refOut) String() string {
	return fmt.Sprintf("completed=%v savepoints=%v aborted=%v discard=%v rejected=%v finalize=%v trigger=%v fail=%t wake=%d",
		r.completed, r.savepoints, r.aborted, r.discard, r.rejected, r.finalize, r.trigger, r.failJob, r.wake)
}

func newRefModel(s Settings, tasks int, next, now int64) *refModel {
	return &refModel{s: s, tasks: tasks, next: next, now: now, schedFrom: now, live: map[int64]*refCP{}}
}

func (m *refModel) ids() []int64 {
	var ids []int64
	for id := range m.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *refModel) inFlight() int {
	n := 0
	for _, cp := range m.live {
		if !cp.allAcked() {
			n++
		}
	}
	return n
}

func (m *refModel) pendingString() string {
	var b strings.Builder
	for _, id := range m.ids() {
		cp := m.live[id]
		fmt.Fprintf(&b, "%d:%d/%d:%t ", id, len(cp.acked), cp.tasks, cp.allAcked())
	}
	return b.String()
}

// begin moves time forward and expires what is past its deadline.
func (m *refModel) begin(now int64, out *refOut) {
	m.now = max(m.now, now)
	for _, id := range m.ids() {
		if cp, ok := m.live[id]; ok && cp.trig+m.s.Timeout <= m.now {
			m.end(id, cp.trig+m.s.Timeout, reasonExpired, true, true, out)
		}
	}
}

// finish triggers what is due and computes the wake-up time.
func (m *refModel) finish(out *refOut) refOut {
	if !m.suspended {
		m.drain(out)
		due := m.schedFrom + m.s.Interval
		if m.ended {
			due = max(due, m.lastEnd+m.s.MinPause)
		}
		if m.s.Interval > 0 && m.inFlight() < m.s.MaxConcurrent && m.now >= due {
			m.schedFrom = m.now
			m.trigger(Periodic, out)
		}
	}
	var times []int64
	for _, cp := range m.live {
		times = append(times, cp.trig+m.s.Timeout)
	}
	if !m.suspended && m.s.Interval > 0 && m.inFlight() < m.s.MaxConcurrent {
		due := m.schedFrom + m.s.Interval
		if m.ended {
			due = max(due, m.lastEnd+m.s.MinPause)
		}
		times = append(times, due)
	}
	if len(times) > 0 {
		out.wake = slices.Min(times)
	}
	return *out
}

func (m *refModel) drain(out *refOut) {
	for !m.suspended && len(m.queue) > 0 && m.inFlight() < m.s.MaxConcurrent {
		m.trigger(m.queue[0], out)
		m.queue = m.queue[1:]
	}
}

func (m *refModel) trigger(kind Kind, out *refOut) {
	id := m.next
	m.next++
	m.live[id] = &refCP{kind: kind, trig: m.now, tasks: m.tasks, acked: map[TaskID]bool{}}
	out.trigger = append(out.trigger, fmt.Sprintf("%d/%s@%d", id, kind, m.now))
}

func (m *refModel) end(id, at int64, reason string, counted, notify bool, out *refOut) {
	cp := m.live[id]
	delete(m.live, id)
	m.lastEnd, m.ended = at, true
	out.aborted = append(out.aborted, fmt.Sprintf("%d/%s/%t/%s", id, cp.kind, notify, reason))
	if counted && cp.kind != Savepoint {
		m.fails++
		if m.fails > m.s.TolerableFailures {
			out.failJob = true
			m.fails = 0
			m.suspendAll(at, out)
		}
	}
}

func (m *refModel) suspendAll(at int64, out *refOut) {
	m.suspended = true
	for _, id := range m.ids() {
		m.end(id, at, reasonSuspending, false, false, out)
	}
	out.rejected = append(out.rejected, m.queue...)
	m.queue = nil
}

func (m *refModel) tick(now int64) refOut {
	var out refOut
	m.begin(now, &out)
	return m.finish(&out)
}

func (m *refModel) triggerNow(now int64, kind Kind) refOut {
	var out refOut
	m.begin(now, &out)
	m.drain(&out)
	if m.suspended || len(m.queue) >= MaxQueuedRequests {
		out.rejected = append(out.rejected, kind)
	} else {
		m.queue = append(m.queue, kind)
	}
	return m.finish(&out)
}

func (m *refModel) ack(now, id int64, task TaskID) refOut {
	var out refOut
	m.begin(now, &out)
	if cp, ok := m.live[id]; ok && task >= 0 && int(task) < cp.tasks && !cp.acked[task] {
		cp.acked[task] = true
		if cp.allAcked() {
			out.finalize = append(out.finalize, id)
		}
	}
	return m.finish(&out)
}

func (m *refModel) decline(now, id int64, task TaskID, counts bool) refOut {
	var out refOut
	m.begin(now, &out)
	if cp, ok := m.live[id]; ok && task >= 0 && int(task) < cp.tasks && !cp.acked[task] {
		m.end(id, m.now, fmt.Sprintf("declined by task %d: random", task), counts, true, &out)
	}
	return m.finish(&out)
}

func (m *refModel) finalized(now, id int64, err error) refOut {
	var out refOut
	m.begin(now, &out)
	cp, ok := m.live[id]
	switch {
	case !ok || !cp.allAcked():
	case err != nil:
		m.end(id, m.now, fmt.Sprintf("writing the metadata failed: %v", err), true, true, &out)
	case cp.kind == Savepoint:
		delete(m.live, id)
		m.lastEnd, m.ended = m.now, true
		out.savepoints = append(out.savepoints, id)
	default:
		delete(m.live, id)
		m.lastEnd, m.ended = m.now, true
		out.completed = append(out.completed, id)
		m.fails = 0
		for _, other := range m.ids() {
			if other < id && m.live[other].kind != Savepoint {
				m.end(other, m.now, fmt.Sprintf("checkpoint has been subsumed by %d", id), false, true, &out)
			}
		}
		m.retained = append(m.retained, id)
		for len(m.retained) > m.s.Retained {
			out.discard = append(out.discard, m.retained[0])
			m.retained = m.retained[1:]
		}
	}
	return m.finish(&out)
}

func (m *refModel) suspend(now int64) refOut {
	var out refOut
	m.begin(now, &out)
	if !m.suspended {
		m.suspendAll(m.now, &out)
	}
	return m.finish(&out)
}

func (m *refModel) resume(now int64, tasks int) refOut {
	var out refOut
	m.begin(now, &out)
	if !m.suspended {
		m.suspendAll(m.now, &out)
	}
	m.suspended, m.tasks, m.schedFrom = false, tasks, m.now
	return m.finish(&out)
}
