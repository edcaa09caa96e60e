package taskmanager

import (
	"bytes"
	"log/slog"
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

// idleSource is a source that never emits and runs until canceled.
type idleSource struct{ wait chan struct{} }

func (s *idleSource) Open(*operator.Context) error { return nil }
func (s *idleSource) Finish() error                { return nil }
func (s *idleSource) Close() error                 { return nil }
func (s *idleSource) PollNext() (operator.Status, <-chan struct{}, int64, error) {
	return operator.NothingAvailable, s.wait, 0, nil
}

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// updatesOf returns the states reported for e, in order, and the failure
// message of the last FAILED.
func (r *recordingJM) updatesOf(e protocol.ExecutionID) (states []protocol.TaskState, failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.Exec == e {
			states = append(states, u.State)
			if u.Failure != nil {
				failure = u.Failure.Message
			}
		}
	}
	return states, failure
}

func waitState(t *testing.T, jm *recordingJM, e protocol.ExecutionID, st protocol.TaskState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		states, _ := jm.updatesOf(e)
		if len(states) > 0 && states[len(states)-1] == st {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reported %v; want it to reach %s", e, states, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeploymentAdmission: a TaskManager with one slot runs attempt 1 of a
// job; a duplicate of that deployment is refused and logged without
// failing the running execution; a deployment of the older attempt 0 is
// refused and reported FAILED naming the stale attempt; one of another
// allocation finds no free slot; once attempt 1 ended, its slot takes
// attempt 2.
func TestDeploymentAdmission(t *testing.T) {
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
	logs := &syncBuffer{}
	jm := &recordingJM{}
	jobs := &LocalJobs{}
	tm := New(Config{ID: "tm-0", Slots: 1, NetworkMemory: 1 << 20, Jobs: jobs, Logger: slog.New(slog.NewTextHandler(logs, nil))}, jm, network.NewLocalShuffle())
	defer tm.Shutdown()
	jobs.Add(&Job{ID: "j", Graph: g, Clock: clock.System{}, BufferTimeout: -1})
	tm.RegisterJob(protocol.RegisterJob{JobID: "j"})
	deploy := func(attempt, slot int) protocol.ExecutionID {
		e := protocol.ExecutionID{Job: "j", Subtask: slot, Attempt: attempt}
		tm.SubmitTask(protocol.Deployment{Exec: e, Slot: slot, Allocation: protocol.AllocationID{Job: "j", Attempt: attempt, Slot: slot},
			KeyHash: uint8(keygroup.CurrentHash)})
		return e
	}
	one := deploy(1, 0)
	waitState(t, jm, one, protocol.TaskRunning)

	deploy(1, 0) // a duplicate
	if !strings.Contains(logs.String(), "was deployed here before") {
		t.Errorf("the duplicate's refusal is not logged; log:\n%s", logs)
	}
	stale := deploy(0, 0)
	if states, msg := jm.updatesOf(stale); len(states) != 1 || states[0] != protocol.TaskFailed ||
		!strings.Contains(msg, "attempt 0 of job j is stale: attempt 1 was deployed here since") {
		t.Errorf("the stale deployment reported %v (%q); want FAILED naming the stale attempt", states, msg)
	}
	full := deploy(1, 1)
	if states, msg := jm.updatesOf(full); len(states) != 1 || states[0] != protocol.TaskFailed ||
		!strings.Contains(msg, "no free slot for allocation j/1/1 (epoch 0): its 1 slots hold allocation j/1/0 (epoch 0)") {
		t.Errorf("the deployment beyond the slots reported %v (%q); want FAILED naming the slots", states, msg)
	}
	if states, _ := jm.updatesOf(one); states[len(states)-1] != protocol.TaskRunning {
		t.Fatalf("the admitted execution went %v after the refusals; want still RUNNING", states)
	}

	tm.CancelTask(one)
	waitState(t, jm, one, protocol.TaskCanceled)
	two := deploy(2, 0)
	waitState(t, jm, two, protocol.TaskRunning)
}
