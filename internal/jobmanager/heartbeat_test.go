package jobmanager

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// seqTM is a fakeTM whose gateway numbers its messages, as
// rpc.ServerSession does: Sent is the count of calls made to it.
type seqTM struct{ *fakeTM }

func (s seqTM) Sent() uint64 { return uint64(s.numCalls()) }

func (f *fakeTM) lastReply() (protocol.HeartbeatReply, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.replies) == 0 {
		return protocol.HeartbeatReply{}, 0
	}
	return f.replies[len(f.replies)-1], len(f.replies)
}

func (f *fakeTM) count(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[kind]
}

func (f *fakeTM) got(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.calls, call)
}

// TestHeartbeatTimeoutRestartsOnSpare: of three TaskManagers, the one
// holding job slot 1 stops heartbeating; it is kept until heartbeat.timeout
// has passed since its last sign of life, then lost with a reason that says
// so, and the job restarts, one heartbeat.interval later (decision 13), on
// the TaskManager left and the spare.
func TestHeartbeatTimeoutRestartsOnSpare(t *testing.T) {
	jm := New(nil)
	clk := clock.NewManual(1000)
	if err := jm.MonitorHeartbeats(HeartbeatConfig{Interval: 100 * time.Millisecond, Timeout: 500 * time.Millisecond, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	defer jm.StopHeartbeats()
	g := twoVertexGraph(t, 2)
	var tms []*fakeTM
	for i := range 3 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	waitFor(t, "the monitor's timer", func() bool { return clk.Pending() > 0 })
	seq := uint64(0)
	for range 4 { // to 1400: tm-1 silent for 400 ms of 500
		clk.AdvanceDuration(100 * time.Millisecond)
		seq++
		for _, id := range []string{"tm-0", "tm-2"} {
			jm.Heartbeat(protocol.Heartbeat{TaskManager: id, Seq: seq})
		}
		if n := jm.NumTaskManagers(); n != 3 {
			t.Fatalf("%d TaskManagers at %d ms, before tm-1's heartbeat.timeout; want 3", n, clk.NowMillis())
		}
	}
	waitFor(t, "the replies", func() bool { _, n := tms[2].lastReply(); return n == 4 })
	if last, n, ok := jm.TaskManagerHeartbeat("tm-0"); !ok || n != 4 || last.UnixMilli() != 1400 {
		t.Errorf("tm-0 last heard at %v after %d heartbeats (%v); want 1400 ms after 4", last.UnixMilli(), n, ok)
	}
	clk.AdvanceDuration(100 * time.Millisecond) // 1500: tm-1's deadline
	waitFor(t, "tm-1 lost", func() bool { return jm.NumTaskManagers() == 2 })
	info, _ := jm.Job("j")
	const want = "TaskManager tm-1 lost: no heartbeat for 500ms (heartbeat.timeout 500ms)"
	if info.Failure == nil || info.Failure.Err.Error() != want {
		t.Fatalf("the job failed with %+v; want %q", info.Failure, want)
	}
	if _, _, ok := jm.TaskManagerHeartbeat("tm-1"); ok {
		t.Error("the lost TaskManager is still monitored")
	}
	// The restart waits for one heartbeat.interval after the deadline, by
	// when tm-1 has fenced itself.
	waitFor(t, "the restart timer", func() bool { return clk.Pending() >= 2 })
	time.Sleep(20 * time.Millisecond)
	if info, _ := jm.Job("j"); info.Restarts != 0 {
		t.Fatalf("restarted at the loss; want one heartbeat.interval later")
	}
	clk.AdvanceDuration(100 * time.Millisecond)
	waitFor(t, "the restarted job running", func() bool {
		info, _ := jm.Job("j")
		return info.Restarts == 1 && allTasks(jm, "j", protocol.TaskRunning)
	})
	if got := tms[2].submits(); !slices.Equal(got, []string{exec("j", 0, 1, 1), exec("j", 1, 1, 1)}) {
		t.Errorf("the spare got %q, want job slot 1 of attempt 1", got)
	}
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, tms...)
}

// TestHeartbeatReconcile: the reply to a heartbeat holds the allocations
// of the TaskManager's job slots; an execution it reports under an
// allocation the JobManager does not hold is cancelled there; its counters
// reach the job's view; an execution the JobManager deployed there and the
// heartbeat no longer reports fails as missing, but only once the
// heartbeat reflects the deployment (Processed covers its seq).
func TestHeartbeatReconcile(t *testing.T) {
	jm := New(nil)
	clk := clock.NewManual(1000)
	if err := jm.MonitorHeartbeats(HeartbeatConfig{Timeout: NoTimeout, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	defer jm.StopHeartbeats()
	g := twoVertexGraph(t, 2)
	f := newFakeTM(jm, "tm-0")
	f.srcOp = g.OperatorIDs[0]
	tm := seqTM{f}
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-0", Slots: 2, NetworkMemory: 1 << 30}, tm)
	if err := jm.Submit(&JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk, Restart: noRestart}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	var running []protocol.ExecutionReport
	for v := range 2 {
		for s := range 2 {
			running = append(running, protocol.ExecutionReport{Exec: ExecutionID{Job: "j", Vertex: v, Subtask: s},
				Allocation: protocol.AllocationID{Job: "j", Slot: s}, State: protocol.TaskRunning})
		}
	}
	ghost := protocol.ExecutionReport{Exec: ExecutionID{Job: "ghost"}, Allocation: protocol.AllocationID{Job: "ghost"}, State: protocol.TaskRunning}
	stale := protocol.ExecutionReport{Exec: ExecutionID{Job: "j", Vertex: 1, Subtask: 0}, Allocation: protocol.AllocationID{Job: "j", Slot: 1},
		State: protocol.TaskRunning} // an execution of the job under another job slot's allocation
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-0", Seq: 1, Executions: append(slices.Clone(running), ghost, stale),
		Stats: []protocol.ExecutionStats{{Exec: running[0].Exec, Stats: protocol.TaskStats{RecordsIn: 42}}}})
	waitFor(t, "the reply", func() bool { _, n := f.lastReply(); return n == 1 })
	r, _ := f.lastReply()
	if want := []protocol.AllocationID{{Job: "j", Slot: 0}, {Job: "j", Slot: 1}}; r.Acked != 1 || !reflect.DeepEqual(r.Held, want) {
		t.Errorf("replied %+v; want heartbeat 1 acknowledged, holding %v", r, want)
	}
	for _, c := range []protocol.ExecutionReport{ghost, stale} {
		if !f.got("cancel " + c.Exec.String()) {
			t.Errorf("%s under %s was not cancelled", c.Exec, c.Allocation)
		}
	}
	if n := f.count("cancel"); n != 2 {
		t.Errorf("%d cancels; want the 2 unheld executions only", n)
	}
	if info, _ := jm.Job("j"); info.Vertices[0].Subtasks[0] == nil || info.Vertices[0].Subtasks[0].RecordsIn != 42 {
		t.Errorf("the heartbeat's counters are not in the job's view: %+v", info.Vertices[0].Subtasks[0])
	}

	// A heartbeat that reflects no deployment flags nothing missing.
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-0", Seq: 2, Executions: running[:3]})
	if info, _ := jm.Job("j"); info.Status != protocol.JobRunning {
		t.Fatalf("the job is %s after a heartbeat that reflects no deployment; want RUNNING", info.Status)
	}
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-0", Seq: 3, Processed: tm.Sent(), Executions: running[:3]})
	info, _ := jm.Job("j")
	if info.Vertices[1].Tasks[1] != protocol.TaskFailed || info.Failure == nil ||
		!strings.Contains(info.Failure.Err.Error(), "missing on TaskManager tm-0") {
		t.Fatalf("sink subtask 2 is %s, the job's failure %+v; want FAILED, missing on TaskManager tm-0", info.Vertices[1].Tasks[1], info.Failure)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, f)
}

// TestDeregisterLosesAtOnce: a TaskManager that deregisters is lost at
// once, its jobs restart at once on the spare, and its later heartbeats
// are not answered.
func TestDeregisterLosesAtOnce(t *testing.T) {
	jm := New(nil)
	clk := clock.NewManual(1000)
	if err := jm.MonitorHeartbeats(HeartbeatConfig{Interval: time.Second, Timeout: 5 * time.Second, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	defer jm.StopHeartbeats()
	g := twoVertexGraph(t, 2)
	var tms []*fakeTM
	for i := range 3 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	jm.Deregister(protocol.Deregister{TaskManager: "tm-1", Reason: "SIGTERM"})
	if n := jm.NumTaskManagers(); n != 2 {
		t.Fatalf("%d TaskManagers after tm-1 deregistered; want 2", n)
	}
	waitFor(t, "the restarted job running, with no clock advance", func() bool {
		info, _ := jm.Job("j")
		return info.Restarts == 1 && allTasks(jm, "j", protocol.TaskRunning)
	})
	info, _ := jm.Job("j")
	if want := "TaskManager tm-1 lost: deregistered (SIGTERM)"; info.Exceptions[0].Err.Error() != want {
		t.Errorf("the job failed with %v; want %q", info.Exceptions[0].Err, want)
	}
	if got := tms[2].submits(); len(got) != 2 {
		t.Errorf("the spare got %q; want job slot 1 of attempt 1", got)
	}
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-1", Seq: 9})
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-0", Seq: 9})
	waitFor(t, "tm-0's reply", func() bool { _, n := tms[0].lastReply(); return n == 1 })
	if _, n := tms[1].lastReply(); n != 0 {
		t.Errorf("the deregistered TaskManager got %d replies", n)
	}
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, tms...)
}

// TestSessionEndedLoses: a TaskManager whose session ended is lost at
// once; when its side did not end it (it may not know yet), its job is
// deployed again only one heartbeat.interval after it must have fenced
// itself (its last heartbeat plus heartbeat.timeout), on the spare.
func TestSessionEndedLoses(t *testing.T) {
	jm := New(nil)
	clk := clock.NewManual(1000)
	if err := jm.MonitorHeartbeats(HeartbeatConfig{Interval: time.Second, Timeout: 5 * time.Second, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	defer jm.StopHeartbeats()
	g := twoVertexGraph(t, 1)
	var tms []*fakeTM
	for i := range 2 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	clk.AdvanceDuration(time.Second)
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-0", Seq: 1}) // last heard at 2000
	jm.TaskManagerSessionEnded("tm-0", "keepalive timeout", false)
	info, _ := jm.Job("j")
	if want := "TaskManager tm-0 lost: session ended (keepalive timeout)"; jm.NumTaskManagers() != 1 || info.Failure == nil || info.Failure.Err.Error() != want {
		t.Fatalf("%d TaskManagers, failure %+v; want 1, %q", jm.NumTaskManagers(), info.Failure, want)
	}
	waitFor(t, "the restart timer", func() bool { return clk.Pending() >= 2 })
	clk.Set(5000)
	jm.Heartbeat(protocol.Heartbeat{TaskManager: "tm-1", Seq: 1}) // the spare stays
	clk.Set(7999)                                                 // 2000 + 5 s + 1 s is 8000
	time.Sleep(20 * time.Millisecond)
	if info, _ := jm.Job("j"); info.Restarts != 0 {
		t.Fatal("restarted before the lost TaskManager must have fenced itself")
	}
	clk.Set(8000)
	waitFor(t, "the job running on the spare", func() bool {
		info, _ := jm.Job("j")
		return info.Restarts == 1 && allTasks(jm, "j", protocol.TaskRunning)
	})
	if got := tms[1].submits(); len(got) != 2 {
		t.Errorf("the spare got %q; want attempt 1", got)
	}
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, tms...)
}
