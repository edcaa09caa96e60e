package taskmanager

import (
	"strings"
	"sync"
	"testing"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
)

// recordingJM is a JobManager gateway that keeps the state updates.
type recordingJM struct {
	mu      sync.Mutex
	updates []protocol.TaskStateUpdate
}

func (r *recordingJM) UpdateTaskState(u protocol.TaskStateUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
}
func (r *recordingJM) AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint) {}
func (r *recordingJM) DeclineCheckpoint(protocol.DeclineCheckpoint)         {}
func (r *recordingJM) SendEvent(protocol.OperatorEvent)                     {}
func (r *recordingJM) SourceEnded(protocol.SourceEnded)                     {}
func (r *recordingJM) ReportTaskStats(protocol.TaskStatsReport)             {}

// TestSubmitFailureReportedAsFailed: a deployment that cannot start comes
// back as a FAILED state update naming the execution and the cause (the
// gateway call returns nothing).
func TestSubmitFailureReportedAsFailed(t *testing.T) {
	jm := &recordingJM{}
	tm := New(Config{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 20}, jm, network.NewLocalShuffle())
	defer tm.Shutdown()
	e := protocol.ExecutionID{Job: "unknown", Vertex: 0, Subtask: 0}
	tm.SubmitTask(protocol.Deployment{Exec: e})
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
