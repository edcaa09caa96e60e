package taskmanager

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/tcp"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
)

// discard is an operator that drops its input.
type discard struct{}

func (discard) Open(*operator.Context) error     { return nil }
func (discard) Finish() error                    { return nil }
func (discard) Close() error                     { return nil }
func (discard) ProcessElement(int64, int64)      {}
func (discard) ProcessWatermark(int64)           {}
func (discard) ProcessBatch([]int64, int64)      {}
func (discard) EndInput(int)                     {}
func (discard) HandleOperatorEvent([]byte) error { return nil }

// startDataTM starts a TaskManager with a data plane on loopback.
func startDataTM(t *testing.T, id string, jobs *LocalJobs, jm protocol.JobManagerGateway) (*TaskManager, *tcp.Server) {
	t.Helper()
	cfg := tcp.Config{TaskManager: id, Epoch: 1, BuildID: "test", HelloTimeout: 300 * time.Millisecond}
	ln, err := tcp.Listen(context.Background(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tcp.NewServer(cfg, ln)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	tm := New(Config{ID: id, Slots: 2, NetworkMemory: 16 << 20, Jobs: jobs,
		Data: &DataPlane{Address: ln.Addr().String(), Server: srv, Dialer: tcp.NewDialer(cfg), Client: cfg}}, jm, network.NewLocalShuffle())
	t.Cleanup(func() {
		tm.Shutdown()
		srv.Close()
	})
	return tm, srv
}

// sourceToSinkJob is job "j": an idle source (parallelism 1) feeding a
// sink of parallelism 2 through a rebalance edge.
func sourceToSinkJob(t *testing.T) *LocalJobs {
	t.Helper()
	sg := &graph.StreamGraph{JobName: "j"}
	src := &graph.Node{Name: "idle", UID: "idle", IsSource: true, Parallelism: 1,
		Factory: operator.FactoryFunc(func(*operator.Context, any) (operator.Instance, error) {
			s := &idleSource{wait: make(chan struct{})}
			return operator.Instance{Op: s, Source: s}, nil
		})}
	src.OutType = operator.NewStreamType[int64](nil)
	src.TypeName = src.OutType.(operator.StreamType).TypeName()
	sg.Add(src)
	sg.Add(&graph.Node{Name: "discard", UID: "discard", IsSink: true, Parallelism: 2, Inputs: []graph.Edge{{From: src.ID, Partition: graph.Rebalance}},
		Factory: operator.FactoryFunc(func(*operator.Context, any) (operator.Instance, error) {
			return operator.Instance{Op: discard{}, Inputs: []any{operator.Input[int64](discard{})}}, nil
		})})
	g, err := graph.Compile(sg)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Vertices) != 2 {
		t.Fatalf("the graph has %d vertices, want the source and the sink apart", len(g.Vertices))
	}
	jobs := &LocalJobs{}
	jobs.Add(&Job{ID: "j", Graph: g, Clock: clock.System{}, BufferTimeout: -1, BufferSize: 32 << 10, BuffersPerChannel: 2, FloatingBuffers: 8})
	return jobs
}

// TestRemoteChannelFailureFailsTasks: a source on one TaskManager feeds a
// subtask on another over the data plane; when the connection between
// them fails (the producer's server closes), both tasks fail at once,
// each naming its peer TaskManager, though neither has any data to wait
// for (without that, both would wait forever).
func TestRemoteChannelFailureFailsTasks(t *testing.T) {
	jobs := sourceToSinkJob(t)
	jmA, jmB := &recordingJM{}, &recordingJM{}
	a, srvA := startDataTM(t, "tm-a", jobs, jmA)
	b, _ := startDataTM(t, "tm-b", jobs, jmB)
	// Job slot 0 (the source, subtask 0 of the sink) on tm-a, slot 1
	// (subtask 1 of the sink) on tm-b.
	alloc := func(s int) protocol.AllocationID { return protocol.AllocationID{Job: "j", Slot: s} }
	place := protocol.DeployAttempt{JobID: "j", Slots: []protocol.SlotPlacement{
		{TaskManager: "tm-a", DataAddress: a.Registration().DataAddress, Allocation: alloc(0)},
		{TaskManager: "tm-b", DataAddress: b.Registration().DataAddress, Allocation: alloc(1)}}}
	for _, tm := range []*TaskManager{a, b} {
		tm.RegisterJob(protocol.RegisterJob{JobID: "j"})
		tm.DeployAttempt(place)
	}
	producer := protocol.ExecutionID{Job: "j", Vertex: 0, Subtask: 0}
	consumer := protocol.ExecutionID{Job: "j", Vertex: 1, Subtask: 1}
	a.SubmitTask(protocol.Deployment{Exec: producer, Allocation: alloc(0), KeyHash: uint8(keygroup.CurrentHash)})
	b.SubmitTask(protocol.Deployment{Exec: consumer, Slot: 1, Allocation: alloc(1), KeyHash: uint8(keygroup.CurrentHash)})
	waitState(t, jmA, producer, protocol.TaskRunning)
	waitState(t, jmB, consumer, protocol.TaskRunning)

	srvA.Close() // every data connection of tm-a fails
	waitState(t, jmB, consumer, protocol.TaskFailed)
	// The producer learns of it only if the consumer's partition request
	// reached its server before the close (RUNNING does not wait for
	// that); otherwise, in a cluster, the JobManager cancels it when it
	// restarts the job. Which of the two happened is a race of this test,
	// so the producer's failure is checked only when it came.
	// TODO(next session): wait for the request to be served (an observable
	// on tcp.Server) and check the producer's failure always.
	producerFailed := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !producerFailed; time.Sleep(10 * time.Millisecond) {
		states, _ := jmA.updatesOf(producer)
		producerFailed = slices.Contains(states, protocol.TaskFailed)
	}
	_, msg := jmB.updatesOf(consumer)
	if !strings.Contains(msg, `TaskManager "tm-a" (`+a.Registration().DataAddress+`)`) || !strings.Contains(msg, `the input of "discard" from "Source: idle"`) &&
		!strings.Contains(msg, "the data plane") {
		t.Errorf("the consumer failed with %q; want the input channel and the peer tm-a at its data address named", msg)
	}
	if _, msg := jmA.updatesOf(producer); producerFailed && (!strings.Contains(msg, `TaskManager "tm-b"`) || !strings.Contains(msg, "the data plane")) {
		t.Errorf("the producer failed with %q; want its remote consumer tm-b named", msg)
	} else if !producerFailed {
		t.Log("the consumer's request had not reached the producer's server when it closed: the producer was not told")
	}
}

// TestDialOffTheDeployPath: a deployment whose input comes from a
// TaskManager that accepts the connection but never answers returns at
// once (the dial runs on the task's goroutine, not on the one that
// delivers the JobManager's messages), and the task fails naming the
// silent peer once the HELLO times out.
func TestDialOffTheDeployPath(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	defer func() {
		silent.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			select {
			case held <- c: // never answers
			default:
				c.Close()
			}
		}
	}()
	jm := &recordingJM{}
	b, _ := startDataTM(t, "tm-b", sourceToSinkJob(t), jm)
	alloc := func(s int) protocol.AllocationID { return protocol.AllocationID{Job: "j", Slot: s} }
	b.RegisterJob(protocol.RegisterJob{JobID: "j"})
	b.DeployAttempt(protocol.DeployAttempt{JobID: "j", Slots: []protocol.SlotPlacement{
		{TaskManager: "tm-a", DataAddress: silent.Addr().String(), Allocation: alloc(0)},
		{TaskManager: "tm-b", DataAddress: b.Registration().DataAddress, Allocation: alloc(1)}}})
	consumer := protocol.ExecutionID{Job: "j", Vertex: 1, Subtask: 1}
	start := time.Now()
	b.SubmitTask(protocol.Deployment{Exec: consumer, Slot: 1, Allocation: alloc(1), KeyHash: uint8(keygroup.CurrentHash)})
	if took := time.Since(start); took > 150*time.Millisecond {
		t.Errorf("SubmitTask took %v with a silent producer TaskManager; want it to return at once", took)
	}
	waitState(t, jm, consumer, protocol.TaskFailed)
	if _, msg := jm.updatesOf(consumer); !strings.Contains(msg, `TaskManager "tm-a" (`+silent.Addr().String()+`)`) {
		t.Errorf("the consumer failed with %q; want the silent peer named", msg)
	}
}
