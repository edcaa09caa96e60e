package jobmanager

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// holders counts, per goroutine, the JobManager locks it holds (lockHook).
var holders sync.Map // goroutine id -> int

func init() {
	lockHook = func(held bool) {
		g := goroutineID()
		n, _ := holders.Load(g)
		c, _ := n.(int)
		if held {
			c++
		} else {
			c--
		}
		holders.Store(g, c)
	}
}

// goroutineID parses the calling goroutine's id from its stack header.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, err := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}

// lockedHere reports whether the calling goroutine holds a JobManager's lock.
func lockedHere() bool {
	n, _ := holders.Load(goroutineID())
	c, _ := n.(int)
	return c > 0
}

// fakeTM is a TaskManager gateway that runs nothing: it answers every
// message at once, from inside the call (as a TaskManager in the same
// process may), records the calls, and flags a call made while the calling
// goroutine holds the JobManager's lock.
type fakeTM struct {
	jm   *JobManager
	name string
	// srcOp is the source's operator ID, to send its coordinator an event.
	srcOp string

	mu        sync.Mutex
	calls     []string // "kind exec"
	counts    map[string]int
	submitted map[ExecutionID]bool
	locked    []string // calls made under the JobManager's lock
	// ackAll: acknowledge each trigger for every execution of its subtask.
	ackAll bool
	// replies are the heartbeat replies it got.
	replies []protocol.HeartbeatReply
	// completes are the ids of the checkpoints it was told completed.
	completes []int64
}

func newFakeTM(jm *JobManager, name string) *fakeTM {
	return &fakeTM{jm: jm, name: name, counts: map[string]int{}, submitted: map[ExecutionID]bool{}, ackAll: true}
}

// record records a call and returns how to answer it: at once, or, for a
// call made under the JobManager's lock (a bug), from another goroutine,
// so that the test reports the bug instead of deadlocking.
func (f *fakeTM) record(kind string, e ExecutionID) (answer func(func())) {
	under := lockedHere()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %v", kind, e))
	f.counts[kind]++
	if under {
		f.locked = append(f.locked, kind)
		return func(fn func()) { go fn() }
	}
	return func(fn func()) { fn() }
}

func (f *fakeTM) SubmitTask(d protocol.Deployment) {
	answer := f.record("submit", d.Exec)
	f.mu.Lock()
	f.submitted[d.Exec] = true
	f.mu.Unlock()
	answer(func() {
		f.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskInitializing})
		f.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: d.Exec, State: protocol.TaskRunning})
		if d.Exec.Vertex == 0 {
			f.jm.SendEvent(protocol.OperatorEvent{Exec: d.Exec, OperatorID: f.srcOp, Payload: []byte("register")})
		}
	})
}

func (f *fakeTM) CancelTask(e ExecutionID) {
	f.record("cancel", e)(func() {
		f.jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: e, State: protocol.TaskCanceled})
	})
}

func (f *fakeTM) TriggerCheckpoint(tc protocol.TriggerCheckpoint) {
	answer := f.record("trigger", tc.Exec)
	f.mu.Lock()
	var acks []ExecutionID
	for e := range f.submitted {
		if e.Subtask == tc.Exec.Subtask && e.Attempt == tc.Exec.Attempt && f.ackAll {
			acks = append(acks, e)
		}
	}
	f.mu.Unlock()
	answer(func() {
		for _, e := range acks {
			f.jm.AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint{Exec: e, ID: tc.ID})
		}
	})
}

func (f *fakeTM) NotifyCheckpoint(n protocol.NotifyCheckpoint) {
	f.record("notify", n.Exec)
	if n.Complete {
		f.mu.Lock()
		f.completes = append(f.completes, n.ID)
		f.mu.Unlock()
	}
}
func (f *fakeTM) SendEvent(e protocol.OperatorEvent) { f.record("event", e.Exec) }
func (f *fakeTM) RegisterJob(protocol.RegisterJob)   {}
func (f *fakeTM) DeployAttempt(a protocol.DeployAttempt) {
	f.record(fmt.Sprintf("place %d slots on %s", len(a.Slots), placedOn(a)), ExecutionID{Job: a.JobID, Attempt: a.Attempt})
}

// placedOn lists where each slot of a is: "tm@address,...".
func placedOn(a protocol.DeployAttempt) string {
	var b strings.Builder
	for i, p := range a.Slots {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s@%s", p.TaskManager, p.DataAddress)
	}
	return b.String()
}
func (f *fakeTM) ReleaseJob(r protocol.ReleaseJob) {
	f.record("release", ExecutionID{Job: r.JobID, Attempt: r.Attempt})
}

func (f *fakeTM) HeartbeatReply(r protocol.HeartbeatReply) {
	f.record("reply", ExecutionID{})
	f.mu.Lock()
	f.replies = append(f.replies, r)
	f.mu.Unlock()
}

// echoCoordinator answers every event of a subtask with one to it.
type echoCoordinator struct{ ctx opcoordinator.Context }

func (c *echoCoordinator) Start() error { return nil }
func (c *echoCoordinator) HandleEvent(subtask int, p []byte) error {
	c.ctx.SendEvent(subtask, append([]byte("re: "), p...))
	return nil
}
func (c *echoCoordinator) SubtaskReset(int)               {}
func (c *echoCoordinator) Snapshot(int64) ([]byte, error) { return []byte("enumerator"), nil }
func (c *echoCoordinator) Close() error                   { return nil }
func (echoFactory) CreateCoordinator(ctx opcoordinator.Context, _ []byte) (opcoordinator.Coordinator, error) {
	return &echoCoordinator{ctx: ctx}, nil
}

type echoFactory struct{}

// twoVertexGraph is a source (with a coordinator) feeding a sink through a
// rebalance, at parallelism par.
func twoVertexGraph(t *testing.T, par int) *graph.JobGraph {
	t.Helper()
	sg := &graph.StreamGraph{JobName: "gateway test", DefaultParallelism: par}
	sg.Add(&graph.Node{Name: "src", UID: "src", IsSource: true, Coordinator: echoFactory{}})
	sg.Add(&graph.Node{Name: "sink", UID: "sink", IsSink: true, Inputs: []graph.Edge{{From: 0, Partition: graph.Rebalance}}})
	g, err := graph.Compile(sg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var noRestart = restart.Config{Type: restart.None}.WithDefaults(false)

var testNetwork = NetworkConfig{BufferSize: 32 << 10, BuffersPerChannel: 2, FloatingBuffers: 8}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestNoGatewayCallUnderLock runs a job through deployment, operator
// events, checkpoints, a task failure with a restart and a cancel against
// TaskManagers that answer from inside each call, and checks that the
// JobManager made no gateway call while holding its lock (which would also
// deadlock here), and that each TaskManager got its messages in order.
func TestNoGatewayCallUnderLock(t *testing.T) {
	jm := New(nil)
	g := twoVertexGraph(t, 2)
	var tms []*fakeTM
	for i := range 2 {
		f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
		f.srcOp = g.OperatorIDs[0]
		tms = append(tms, f)
		jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}, f)
	}
	store, err := storage.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var cmu sync.Mutex
	completed := 0
	spec := &JobSpec{ID: "job-1", Name: "gateway test", Lineage: "l", Graph: g, Network: testNetwork,
		Checkpoints: &CheckpointSpec{Settings: coordinator.Settings{Interval: 10}, Store: store},
		Restart:     restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(true),
		OnCheckpoint: func(int64, bool) {
			cmu.Lock()
			completed++
			cmu.Unlock()
		},
	}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	done := func(n int) func() bool {
		return func() bool { cmu.Lock(); defer cmu.Unlock(); return completed >= n }
	}
	waitFor(t, "two checkpoints", done(2))
	// A task fails: the job restarts (cancels, releases, deploys again).
	jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: ExecutionID{Job: "job-1", Vertex: 1, Subtask: 1},
		State: protocol.TaskFailed, Failure: &protocol.Failure{Message: "boom"}})
	waitFor(t, "a checkpoint of the restarted job", func() bool {
		info, _ := jm.Job("job-1")
		return info.Restarts == 1 && info.Status == protocol.JobRunning && done(4)()
	})
	if err := jm.Cancel("job-1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := jm.Wait(ctx, "job-1")
	if err != nil || st != protocol.JobCanceled {
		t.Fatalf("job ended %s, %v; want CANCELED", st, err)
	}
	jm.Drain("job-1")
	for _, f := range tms {
		waitFor(t, f.name+"'s release", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.counts["release"] >= 2 })
		f.mu.Lock()
		if len(f.locked) > 0 {
			t.Errorf("%s: gateway calls made under the JobManager's lock: %v", f.name, f.locked)
		}
		for _, kind := range []string{"submit", "event", "trigger", "notify", "cancel", "release"} {
			if f.counts[kind] == 0 {
				t.Errorf("%s: no %s call; the test does not cover it (calls: %v)", f.name, kind, f.calls)
			}
		}
		checkOrder(t, f.name, f.calls)
		f.mu.Unlock()
	}
}

// checkOrder checks that a TaskManager got every message about an
// execution after its deployment, and none after its cancel.
func checkOrder(t *testing.T, name string, calls []string) {
	t.Helper()
	submitted, canceled := map[string]bool{}, map[string]bool{}
	for _, c := range calls {
		kind, exec, _ := strings.Cut(c, " ")
		switch kind {
		case "release":
			continue
		case "submit":
			submitted[exec] = true
		case "trigger", "notify", "event", "cancel":
			if !submitted[exec] {
				t.Errorf("%s: %q before the execution's deployment: %v", name, c, calls)
			}
			if canceled[exec] {
				t.Errorf("%s: %q after the execution's cancel: %v", name, c, calls)
			}
			if kind == "cancel" {
				canceled[exec] = true
			}
		}
	}
}

// TestNetworkMemoryBookedByJobManager: the JobManager books each job's
// network memory on the TaskManagers it registered, refuses a job that does
// not fit what running jobs left, and frees it when a job ends.
func TestNetworkMemoryBookedByJobManager(t *testing.T) {
	jm := New(nil)
	f := newFakeTM(jm, "tm-0")
	// Each of the 2 source subtasks has 2 output channels: 4 buffers of
	// 32 KiB at least, 128 KiB; 192 KiB fit one such job, not two.
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-0", Slots: 4, NetworkMemory: 192 << 10}, f)
	g := twoVertexGraph(t, 2)
	f.srcOp = g.OperatorIDs[0]
	submit := func(id string) error {
		return jm.Submit(&JobSpec{ID: id, Name: id, Lineage: id, Graph: g, Network: testNetwork, Restart: noRestart})
	}
	if err := submit("a"); err != nil {
		t.Fatal(err)
	}
	err := submit("b")
	const want = "not enough network memory: the job needs 128 KiB on TaskManager tm-0 (one 32 KiB buffer for each of its 4 output channels) but its network memory is 192 KiB, of which 64 KiB are free"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("second job: got %v, want %q", err, want)
	}
	if err := jm.Cancel("a"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("a")
	if err := submit("c"); err != nil {
		t.Fatalf("after the first job ended its network memory is free again: %v", err)
	}
	if err := jm.Cancel("c"); err != nil {
		t.Fatal(err)
	}
	<-jm.Done("c")
}

// TestStatsFromReports: the view returns the counters the TaskManagers
// last reported for the current attempt, and drops reports of earlier
// attempts and of unknown executions.
func TestStatsFromReports(t *testing.T) {
	jm := New(nil)
	f := newFakeTM(jm, "tm-0")
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: "tm-0", Slots: 2, NetworkMemory: 1 << 30}, f)
	g := twoVertexGraph(t, 2)
	f.srcOp = g.OperatorIDs[0]
	if err := jm.Submit(&JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Restart: noRestart}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = jm.Cancel("j"); <-jm.Done("j") }()
	e := func(v, s, attempt int) ExecutionID {
		return ExecutionID{Job: "j", Vertex: v, Subtask: s, Attempt: attempt}
	}
	jm.ReportTaskStats(protocol.TaskStatsReport{TaskManager: "tm-0", Tasks: []protocol.ExecutionStats{
		{Exec: e(0, 0, 0), Stats: protocol.TaskStats{RecordsOut: 5, InputWatermark: 1, OutputWatermark: 2}},
		{Exec: e(0, 1, 0), Stats: protocol.TaskStats{RecordsOut: 7}},
		{Exec: e(1, 0, 3), Stats: protocol.TaskStats{RecordsIn: 100}}, // another attempt
		{Exec: ExecutionID{Job: "other"}, Stats: protocol.TaskStats{RecordsIn: 100}},
	}})
	jm.ReportTaskStats(protocol.TaskStatsReport{TaskManager: "tm-0", Tasks: []protocol.ExecutionStats{
		{Exec: e(0, 1, 0), Stats: protocol.TaskStats{RecordsOut: 9}}, // newer
	}})
	info, ok := jm.Job("j")
	if !ok {
		t.Fatal("job not found")
	}
	src, sink := info.Vertices[0], info.Vertices[1]
	if src.Stats.RecordsOut != 14 || src.Subtasks[0] == nil || src.Subtasks[1] == nil {
		t.Errorf("source: records out %d, subtasks %v; want 14 (5 + 9), both reported", src.Stats.RecordsOut, src.Subtasks)
	}
	if src.Watermarks[0] != [2]int64{1, 2} {
		t.Errorf("source subtask 0 watermarks %v, want [1 2]", src.Watermarks[0])
	}
	if sink.Stats.RecordsIn != 0 || sink.Subtasks[0] != nil || sink.Subtasks[1] != nil {
		t.Errorf("sink: records in %d, subtasks %v; want nothing reported", sink.Stats.RecordsIn, sink.Subtasks)
	}
}
