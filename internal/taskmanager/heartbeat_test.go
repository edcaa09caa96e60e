package taskmanager

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
)

func (r *recordingJM) beats() []protocol.Heartbeat {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.heartbeats)
}

func (r *recordingJM) logged(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.log, line)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHeartbeats: a started TaskManager registers and heartbeats at once
// and every heartbeat.interval, each heartbeat carrying its executions
// with their allocations and states, their counters and its free network
// memory; a reply that does not hold an execution's allocation cancels it;
// with no reply for heartbeat.timeout it fences itself (cancels the rest)
// and registers again; Deregister says goodbye and cancels what runs.
func TestHeartbeats(t *testing.T) {
	sg := &graph.StreamGraph{JobName: "j"}
	sg.Add(&graph.Node{Name: "idle", UID: "idle", IsSource: true, IsSink: true,
		Factory: operator.FactoryFunc(func(*operator.Context, any) (operator.Instance, error) {
			s := &idleSource{wait: make(chan struct{})}
			return operator.Instance{Op: s, Source: s}, nil
		})})
	g, err := graph.Compile(sg)
	if err != nil {
		t.Fatal(err)
	}
	jm := &recordingJM{}
	clk := clock.NewManual(1000)
	var registrations atomic.Int32
	jobs := &LocalJobs{}
	tm := New(Config{ID: "tm-0", Slots: 2, NetworkMemory: 1 << 20, Jobs: jobs, Heartbeats: Heartbeats{Interval: 50 * time.Millisecond,
		Timeout: 200 * time.Millisecond, Clock: clk, Register: func() (uint64, string, error) {
			registrations.Add(1)
			return 0, "s", nil
		}}}, jm, network.NewLocalShuffle())
	defer tm.Shutdown()
	if err := tm.Start(); err != nil {
		t.Fatal(err)
	}
	if n, b := registrations.Load(), jm.beats(); n != 1 || len(b) != 1 || b[0].Seq != 1 || b[0].TaskManager != "tm-0" ||
		b[0].FreeNetworkMemory != 1<<20 || len(b[0].Executions) != 0 {
		t.Fatalf("after Start: %d registrations, heartbeats %+v; want 1, and heartbeat 1 of nothing with 1 MiB free", n, b)
	}
	step := func() { // one heartbeat.interval, once the TaskManager's timer is set
		t.Helper()
		waitUntil(t, "the heartbeat timer", func() bool { return clk.Pending() > 0 })
		n := len(jm.beats())
		clk.AdvanceDuration(50 * time.Millisecond)
		waitUntil(t, "a heartbeat", func() bool { return len(jm.beats()) > n })
	}
	for _, job := range []string{"j", "k"} {
		jobs.Add(&Job{ID: job, Graph: g, Clock: clock.System{}, BufferTimeout: -1})
		tm.RegisterJob(protocol.RegisterJob{JobID: job})
	}
	deploy := func(job string, slot int) protocol.ExecutionID {
		e := protocol.ExecutionID{Job: job, Subtask: slot}
		tm.SubmitTask(protocol.Deployment{Exec: e, Slot: slot, Allocation: protocol.AllocationID{Job: job, Slot: slot},
			KeyHash: uint8(keygroup.CurrentHash)})
		waitState(t, jm, e, protocol.TaskRunning)
		return e
	}
	j, k := deploy("j", 0), deploy("k", 0)
	tm.HeartbeatReply(protocol.HeartbeatReply{Acked: 1, Held: []protocol.AllocationID{{Job: "j"}}}) // at 1000
	waitState(t, jm, k, protocol.TaskCanceled)
	step() // 1050
	b := jm.beats()
	h := b[len(b)-1]
	want := []protocol.ExecutionReport{{Exec: j, Allocation: protocol.AllocationID{Job: "j"}, State: protocol.TaskRunning}}
	if h.Seq != 2 || !slices.Equal(h.Executions, want) || len(h.Stats) != 1 || h.Stats[0].Exec != j {
		t.Fatalf("heartbeat %+v; want heartbeat 2 reporting %v and its counters", h, want)
	}
	step() // 1100
	step() // 1150: no reply since the one to heartbeat 1, sent at 1000
	if states, _ := jm.updatesOf(j); states[len(states)-1] != protocol.TaskRunning || registrations.Load() != 1 {
		t.Fatalf("at 1150 ms, 150 ms without a reply, %s is %v after %d registrations; want RUNNING, still registered once",
			j, states, registrations.Load())
	}
	step() // 1200: heartbeat.timeout after heartbeat 1: fenced, registered again, heartbeat
	waitState(t, jm, j, protocol.TaskCanceled)
	if n := registrations.Load(); n != 2 {
		t.Errorf("%d registrations after fencing; want 2", n)
	}
	l := deploy("j", 1)
	tm.Deregister("SIGTERM")
	waitState(t, jm, l, protocol.TaskCanceled)
	if !jm.logged("deregister SIGTERM") {
		t.Error("Deregister sent nothing")
	}
}
