package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
	"github.com/weirhq/weir/internal/taskmanager"
)

// idleSource never emits and runs until canceled.
type idleSource struct{ wait chan struct{} }

func (s *idleSource) Open(*operator.Context) error { return nil }
func (s *idleSource) Finish() error                { return nil }
func (s *idleSource) Close() error                 { return nil }
func (s *idleSource) PollNext() (operator.Status, <-chan struct{}, int64, error) {
	return operator.NothingAvailable, s.wait, 0, nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSilentTaskManagerLostByHeartbeat runs a job at parallelism 2 on an
// embedded cluster of three one-slot TaskManagers with heartbeat.timeout
// on, on a manual clock. The TaskManager of job slot 1 stops (it sends
// nothing more, and nobody tells the JobManager): the JobManager keeps it
// while the others' heartbeats keep them, loses it once it has been silent
// for heartbeat.timeout, and the job restarts on the TaskManager left and
// the spare.
func TestSilentTaskManagerLostByHeartbeat(t *testing.T) {
	clk := clock.NewManual(1000)
	c, err := Start(Config{TaskManagers: 3, SlotsPerTaskManager: 1, HeartbeatInterval: 50 * time.Millisecond,
		HeartbeatTimeout: 200 * time.Millisecond, HeartbeatClock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	sg := &graph.StreamGraph{JobName: "idle", DefaultParallelism: 2}
	sg.Add(&graph.Node{Name: "idle", UID: "idle", IsSource: true, IsSink: true,
		Factory: operator.FactoryFunc(func(*operator.Context, any) (operator.Instance, error) {
			s := &idleSource{wait: make(chan struct{})}
			return operator.Instance{Op: s, Source: s}, nil
		})})
	g, err := graph.Compile(sg)
	if err != nil {
		t.Fatal(err)
	}
	c.Jobs.Add(&taskmanager.Job{ID: "j", Graph: g, Clock: clock.System{}, BufferTimeout: -1, BufferSize: 4096, BuffersPerChannel: 2})
	if err := c.JM.Submit(&jobmanager.JobSpec{ID: "j", Name: "idle", Lineage: "j", Graph: g,
		Network: jobmanager.NetworkConfig{BufferSize: 4096, BuffersPerChannel: 2},
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(false)}); err != nil {
		t.Fatal(err)
	}
	running := func(restarts int) func() bool {
		return func() bool {
			info, _ := c.JM.Job("j")
			if info.Restarts != restarts || info.Status != protocol.JobRunning {
				return false
			}
			for _, st := range info.Vertices[0].Tasks {
				if st != protocol.TaskRunning {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "the job running", running(0))
	c.tms[1].Crash() // silent from now on; the JobManager is not told

	live := []string{"taskmanager-0", "taskmanager-2"}
	heard := func(id string) int {
		_, n, _ := c.JM.TaskManagerHeartbeat(id)
		return n
	}
	for now := int64(1050); now <= 1150; now += 50 {
		// Each live TaskManager's timer and the JobManager's are set.
		waitFor(t, "the timers", func() bool { return clk.Pending() >= 3 })
		before := []int{heard(live[0]), heard(live[1])}
		clk.Set(now)
		for i, id := range live {
			waitFor(t, fmt.Sprintf("a heartbeat of %s at %d ms", id, now), func() bool { return heard(id) > before[i] })
		}
		if n := c.JM.NumTaskManagers(); n != 3 {
			t.Fatalf("%d TaskManagers at %d ms, before the silent one's heartbeat.timeout; want 3", n, now)
		}
	}
	waitFor(t, "the timers", func() bool { return clk.Pending() >= 3 })
	clk.Set(1200) // heartbeat.timeout after its last heartbeat, at Start
	waitFor(t, "the silent TaskManager lost", func() bool { return c.JM.NumTaskManagers() == 2 })
	waitFor(t, "the job running again", running(1))
	info, _ := c.JM.Job("j")
	const want = "TaskManager taskmanager-1 lost: no heartbeat for 200ms (heartbeat.timeout 200ms)"
	if len(info.Exceptions) != 1 || info.Exceptions[0].Err.Error() != want {
		t.Fatalf("the job's failures are %+v; want one, %q", info.Exceptions, want)
	}
	for _, id := range live {
		if _, _, ok := c.JM.TaskManagerHeartbeat(id); !ok {
			t.Errorf("%s is no longer monitored", id)
		}
	}
	if total, free := c.JM.SlotCounts(); total != 2 || free != 0 {
		t.Errorf("%d slots, %d free; want the job on both of the 2 left", total, free)
	}
}
