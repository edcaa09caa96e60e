package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// submits returns the executions f was deployed, in order.
func (f *fakeTM) submits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if e, ok := strings.CutPrefix(c, "submit "); ok {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeTM) numCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// noCallsUnderLock fails t if a gateway call reached a TaskManager while
// the JobManager's lock was held.
func noCallsUnderLock(t *testing.T, tms ...*fakeTM) {
	t.Helper()
	for _, f := range tms {
		f.mu.Lock()
		if len(f.locked) > 0 {
			t.Errorf("%s: gateway calls made under the JobManager's lock: %v", f.name, f.locked)
		}
		f.mu.Unlock()
	}
}

func exec(job string, v, s, attempt int) string {
	return ExecutionID{Job: job, Vertex: v, Subtask: s, Attempt: attempt}.String()
}

// allTasks reports whether every execution of job id is in state st.
func allTasks(jm *JobManager, id string, st protocol.TaskState) bool {
	info, _ := jm.Job(id)
	for _, v := range info.Vertices {
		for _, t := range v.Tasks {
			if t != st {
				return false
			}
		}
	}
	return len(info.Vertices) > 0
}

// TestTaskManagerLostRestartsOnSpare: a TaskManager holding half of a job
// is lost; its executions fail with a message naming it and the cause,
// messages about them are ignored from then on, its slots are gone, and the
// job restarts on the TaskManager that held the other half and the spare,
// each job slot in one place (slot sharing).
func TestTaskManagerLostRestartsOnSpare(t *testing.T) {
	jm := New(nil)
	g := twoVertexGraph(t, 2)
	var tms []*fakeTM
	for i := range 3 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	clk := clock.NewManual(1000)
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: time.Second}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	for i, want := range [][]string{{exec("j", 0, 0, 0), exec("j", 1, 0, 0)}, {exec("j", 0, 1, 0), exec("j", 1, 1, 0)}, nil} {
		if got := tms[i].submits(); !slices.Equal(got, want) {
			t.Fatalf("%s was deployed %q, want %q", tms[i].name, got, want)
		}
	}
	lost := tms[1]
	before := lost.numCalls()
	// Lost by silence: the next attempt waits until 5 s from now, when tm-1
	// has fenced itself, beyond the strategy's 1 s.
	jm.TaskManagerLost("tm-1", errors.New("no heartbeat for 5s"), clk.Now().Add(5*time.Second))

	info, _ := jm.Job("j")
	if info.Status != protocol.JobRestarting || info.Failure == nil ||
		info.Failure.Err.Error() != "TaskManager tm-1 lost: no heartbeat for 5s" {
		t.Fatalf("after the loss the job is %s with failure %+v; want RESTARTING, failed by the loss", info.Status, info.Failure)
	}
	if at := info.Times[protocol.JobRestarting]; !at.Equal(clk.Now()) {
		t.Fatalf("the job's RESTARTING time is %v, want the loss's %v (REST's timestamps)", at, clk.Now())
	}
	if total, free := jm.SlotCounts(); jm.NumTaskManagers() != 2 || total != 2 {
		t.Fatalf("%d TaskManagers with %d slots (%d free) after the loss; want 2 with 2", jm.NumTaskManagers(), total, free)
	}
	// Messages about the lost TaskManager's executions are ignored: a late
	// FINISHED does not change its FAILED, counters are not shown.
	gone := ExecutionID{Job: "j", Vertex: 1, Subtask: 1}
	jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: gone, State: protocol.TaskFinished})
	jm.ReportTaskStats(protocol.TaskStatsReport{TaskManager: "tm-1", Tasks: []protocol.ExecutionStats{{Exec: gone, Stats: protocol.TaskStats{RecordsIn: 7}}}})
	info, _ = jm.Job("j")
	if st := info.Vertices[1].Tasks[1]; st != protocol.TaskFailed || info.Vertices[1].Subtasks[1] != nil {
		t.Fatalf("the lost TaskManager's sink subtask is %s with counters %v; want FAILED, none", st, info.Vertices[1].Subtasks[1])
	}

	waitFor(t, "the restart timer", func() bool { return clk.Pending() > 0 })
	clk.AdvanceDuration(time.Second)
	time.Sleep(20 * time.Millisecond) // a restart now would be early; the check below sees it
	if info, _ := jm.Job("j"); info.Restarts != 0 {
		t.Fatalf("restarted %d times 1 s after the loss; want none before its redeployAt", info.Restarts)
	}
	clk.AdvanceDuration(4 * time.Second)
	waitFor(t, "the restarted job running", func() bool {
		info, _ := jm.Job("j")
		return info.Restarts == 1 && allTasks(jm, "j", protocol.TaskRunning)
	})
	if got := tms[0].submits()[2:]; !slices.Equal(got, []string{exec("j", 0, 0, 1), exec("j", 1, 0, 1)}) {
		t.Errorf("tm-0 got %q in attempt 1, want job slot 0", got)
	}
	if got := tms[2].submits(); !slices.Equal(got, []string{exec("j", 0, 1, 1), exec("j", 1, 1, 1)}) {
		t.Errorf("the spare got %q, want job slot 1 of attempt 1", got)
	}
	if n := lost.numCalls(); n != before {
		t.Errorf("the lost TaskManager got %d messages after its loss: %v", n-before, lost.calls[before:])
	}
	if _, free := jm.SlotCounts(); free != 0 {
		t.Errorf("%d slots free while the job runs on both, want 0", free)
	}
	jm.TaskManagerLost("tm-1", errors.New("again"), time.Time{}) // unknown now: nothing happens
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	if _, free := jm.SlotCounts(); free != 2 {
		t.Errorf("%d slots free after the job ended, want 2", free)
	}
	noCallsUnderLock(t, tms...)
}

// TestAttemptWaitsForSlots: with too few free slots a job's executions are
// SCHEDULED and nothing is deployed; a TaskManager registering later lets
// the attempt deploy, over both.
func TestAttemptWaitsForSlots(t *testing.T) {
	jm := New(nil)
	g := twoVertexGraph(t, 2)
	first := newFakeTM(jm, "tm-0")
	first.srcOp = g.OperatorIDs[0]
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 30}, first)
	clk := clock.NewManual(1000)
	if err := jm.Submit(&JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk, Restart: noRestart}); err != nil {
		t.Fatal(err)
	}
	info, _ := jm.Job("j")
	if info.Status != protocol.JobRunning || !allTasks(jm, "j", protocol.TaskScheduled) {
		t.Fatalf("job %s, tasks %v; want RUNNING with every task SCHEDULED", info.Status, info.Vertices)
	}
	if s := first.submits(); len(s) > 0 {
		t.Fatalf("deployed %q with one slot of two", s)
	}
	clk.AdvanceDuration(DefaultSlotRequestTimeout - time.Millisecond) // not yet timed out
	second := newFakeTM(jm, "tm-1")
	second.srcOp = g.OperatorIDs[0]
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-1", Slots: 1, NetworkMemory: 1 << 30}, second)
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	if len(first.submits()) != 2 || len(second.submits()) != 2 {
		t.Fatalf("deployed %q and %q, want two executions on each", first.submits(), second.submits())
	}
	clk.AdvanceDuration(time.Hour) // the stopped timeout fails nothing
	if info, _ := jm.Job("j"); info.Status != protocol.JobRunning {
		t.Fatalf("the job is %s after its slots came; want RUNNING", info.Status)
	}
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, first, second)
}

// TestSlotRequestTimeout: an attempt that waited slot.request.timeout for
// slots fails through the restart strategy: restarted once (it waits
// again), then failed with an error naming the setting, the slots needed
// and those free. A waiting job cancels at once.
func TestSlotRequestTimeout(t *testing.T) {
	jm := New(nil)
	g := twoVertexGraph(t, 2)
	f := newFakeTM(jm, "tm-0")
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 30}, f)
	clk := clock.NewManual(1000)
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk, SlotRequestTimeout: 30 * time.Second,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	for attempt := range 2 {
		waitFor(t, fmt.Sprintf("attempt %d waiting", attempt), func() bool {
			info, _ := jm.Job("j")
			return info.Restarts == attempt && allTasks(jm, "j", protocol.TaskScheduled) && clk.Pending() > 0
		})
		clk.AdvanceDuration(30 * time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := jm.Wait(ctx, "j")
	const want = "could not get the 2 task slots the job needs (its largest parallelism) within slot.request.timeout (30s): 1 are free on 1 TaskManagers"
	if st != protocol.JobFailed || err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "not restarted") {
		t.Fatalf("job %s: %v; want FAILED, %q, not restarted", st, err, want)
	}
	if len(f.submits()) > 0 {
		t.Fatalf("deployed %q", f.submits())
	}
	if _, free := jm.SlotCounts(); free != 1 {
		t.Fatalf("%d slots free after the job failed, want 1", free)
	}

	// Canceling a waiting job ends it at once.
	spec2 := &JobSpec{ID: "k", Name: "k", Lineage: "k", Graph: g, Network: testNetwork, Clock: clk, Restart: noRestart}
	if err := jm.Submit(spec2); err != nil {
		t.Fatal(err)
	}
	if err := jm.Cancel("k"); err != nil {
		t.Fatal(err)
	}
	if st, err := jm.Wait(ctx, "k"); st != protocol.JobCanceled || err != nil {
		t.Fatalf("waiting job canceled: %s, %v", st, err)
	}
}

// TestLossText: a cause that names the TaskManager (heartbeat.Loss.Reason)
// is the failure text as it is; another is prefixed with the TaskManager.
func TestLossText(t *testing.T) {
	for _, c := range []struct{ id, cause, want string }{
		{"tm-2", "TaskManager tm-2 (10.36.0.3) lost: no heartbeat for 5s (heartbeat.timeout 5s)", "TaskManager tm-2 (10.36.0.3) lost: no heartbeat for 5s (heartbeat.timeout 5s)"},
		{"tm-2", "its process is gone", "TaskManager tm-2 lost: its process is gone"},
		{"tm-2", "TaskManager tm-20 lost: deregistered", "TaskManager tm-2 lost: TaskManager tm-20 lost: deregistered"},
	} {
		if got := lossText(c.id, errors.New(c.cause)); got != c.want {
			t.Errorf("lossText(%q, %q) = %q, want %q", c.id, c.cause, got, c.want)
		}
	}
}

// TestLostWithoutSpareWaitsForNewTaskManager: a TaskManager of a job that
// fills the cluster is lost; the restart finds one slot of two, waits with
// its executions SCHEDULED, and deploys once a new TaskManager registers.
func TestLostWithoutSpareWaitsForNewTaskManager(t *testing.T) {
	jm := New(nil)
	g := twoVertexGraph(t, 2)
	var tms []*fakeTM
	for i := range 3 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
	}
	for _, f := range tms[:2] {
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	clk := clock.NewManual(1000)
	spec := &JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Clock: clk,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	jm.TaskManagerLost("tm-0", errors.New("its session ended"), time.Time{})
	waitFor(t, "the restart waiting for slots", func() bool {
		info, _ := jm.Job("j")
		return info.Restarts == 1 && info.Status == protocol.JobRunning && allTasks(jm, "j", protocol.TaskScheduled)
	})
	if got := tms[1].submits(); len(got) != 2 {
		t.Fatalf("tm-1 was deployed %q; want only attempt 0's two executions while attempt 1 waits", got)
	}
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-2", Slots: 1, NetworkMemory: 1 << 30}, tms[2])
	waitFor(t, "attempt 1 running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
	if got := tms[1].submits()[2:]; !slices.Equal(got, []string{exec("j", 0, 0, 1), exec("j", 1, 0, 1)}) {
		t.Errorf("tm-1 got %q in attempt 1, want job slot 0", got)
	}
	if got := tms[2].submits(); !slices.Equal(got, []string{exec("j", 0, 1, 1), exec("j", 1, 1, 1)}) {
		t.Errorf("the new TaskManager got %q, want job slot 1 of attempt 1", got)
	}
	if err := jm.Cancel("j"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("j")
	noCallsUnderLock(t, tms...)
}
