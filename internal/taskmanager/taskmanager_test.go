package taskmanager

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
)

// recordingJM is a JobManager gateway that keeps the state updates and, in
// order with them, the stats reports.
type recordingJM struct {
	mu         sync.Mutex
	updates    []protocol.TaskStateUpdate
	log        []string
	heartbeats []protocol.Heartbeat
}

func (r *recordingJM) UpdateTaskState(u protocol.TaskStateUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	r.log = append(r.log, string(u.State))
}

func (r *recordingJM) ReportTaskStats(rep protocol.TaskStatsReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range rep.Tasks {
		r.log = append(r.log, fmt.Sprintf("stats %s in=%d wm=%d", rep.TaskManager, t.Stats.RecordsIn, t.Stats.InputWatermark))
	}
}
func (r *recordingJM) Heartbeat(h protocol.Heartbeat) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heartbeats = append(r.heartbeats, h)
	for _, t := range h.Stats {
		r.log = append(r.log, fmt.Sprintf("stats %s in=%d wm=%d", h.TaskManager, t.Stats.RecordsIn, t.Stats.InputWatermark))
	}
}
func (r *recordingJM) Deregister(d protocol.Deregister) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "deregister "+d.Reason)
}
func (r *recordingJM) AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint) {}
func (r *recordingJM) DeclineCheckpoint(protocol.DeclineCheckpoint)         {}
func (r *recordingJM) SendEvent(protocol.OperatorEvent)                     {}
func (r *recordingJM) SourceEnded(protocol.SourceEnded)                     {}

// TestSubmitFailureReportedAsFailed: a deployment that cannot start comes
// back as a FAILED state update naming the execution and the cause (the
// gateway call returns nothing).
func TestSubmitFailureReportedAsFailed(t *testing.T) {
	jm := &recordingJM{}
	tm := New(Config{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 20}, jm, network.NewLocalShuffle())
	defer tm.Shutdown()
	e := protocol.ExecutionID{Job: "unknown", Vertex: 0, Subtask: 0}
	tm.SubmitTask(protocol.Deployment{Exec: e, Allocation: protocol.AllocationID{Job: e.Job}})
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if len(jm.updates) != 1 {
		t.Fatalf("got %d state updates, want 1: %+v", len(jm.updates), jm.updates)
	}
	u := jm.updates[0]
	if u.Exec != e || u.State != protocol.TaskFailed || u.Failure == nil ||
		!strings.Contains(u.Failure.Message, "deploying "+e.String()) || !strings.Contains(u.Failure.Message, "job unknown is not registered") {
		t.Fatalf("got %+v (failure %+v), want FAILED for %s naming the unregistered job", u, u.Failure, e)
	}
}

// TestRegistration: a TaskManager registers with its name, slots and
// network memory, which the JobManager books.
func TestRegistration(t *testing.T) {
	tm := New(Config{ID: "tm-3", Slots: 4, NetworkMemory: 64 << 20}, &recordingJM{}, network.NewLocalShuffle())
	defer tm.Shutdown()
	want := protocol.TaskManagerRegistration{ID: "tm-3", Slots: 4, NetworkMemory: 64 << 20}
	if got := tm.Registration(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestFinalStatsBeforeTerminalState: an execution's final counters reach
// the JobManager before its terminal state, so the REST view of an ended
// job shows them.
func TestFinalStatsBeforeTerminalState(t *testing.T) {
	sg := &graph.StreamGraph{JobName: "j"}
	sg.Add(&graph.Node{Name: "broken", UID: "broken", IsSource: true, IsSink: true,
		Factory: operator.FactoryFunc(func(*operator.Context, any) (operator.Instance, error) {
			return operator.Instance{}, errors.New("no operator")
		})})
	g, err := graph.Compile(sg)
	if err != nil {
		t.Fatal(err)
	}
	jm := &recordingJM{}
	jobs := &LocalJobs{}
	tm := New(Config{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 20, Jobs: jobs}, jm, network.NewLocalShuffle())
	jobs.Add(&Job{ID: "j", Graph: g, Clock: clock.System{}, BufferTimeout: -1})
	tm.RegisterJob(protocol.RegisterJob{JobID: "j"})
	tm.SubmitTask(protocol.Deployment{Exec: protocol.ExecutionID{Job: "j"}, Allocation: protocol.AllocationID{Job: "j"}, KeyHash: uint8(keygroup.CurrentHash)})
	deadline := time.Now().Add(10 * time.Second)
	for {
		jm.mu.Lock()
		n := len(jm.updates)
		jm.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tm.Shutdown()
	jm.mu.Lock()
	defer jm.mu.Unlock()
	final := fmt.Sprintf("stats tm-0 in=0 wm=%d", int64(math.MinInt64))
	if n := len(jm.log); n < 3 || jm.log[0] != "INITIALIZING" || jm.log[n-2] != final || jm.log[n-1] != "FAILED" {
		t.Fatalf("got %q; want INITIALIZING, any periodic reports, %q, FAILED", jm.log, final)
	}
}
