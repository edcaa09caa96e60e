package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// countJM counts TaskStateUpdates and signals every n-th.
type countJM struct {
	nopJM
	n, got int
	tick   chan struct{}
}

func (c *countJM) UpdateTaskState(protocol.TaskStateUpdate) {
	c.got++
	if c.got%c.n == 0 {
		c.tick <- struct{}{}
	}
}

// echoTM answers every TriggerCheckpoint with an acknowledgement.
type echoTM struct {
	nopTM
	jm protocol.JobManagerGateway
}

func (e *echoTM) TriggerCheckpoint(t protocol.TriggerCheckpoint) {
	e.jm.AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint{Exec: t.Exec, ID: t.ID})
}

type ackJM struct {
	nopJM
	acks chan struct{}
}

func (a *ackJM) AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint) { a.acks <- struct{}{} }

func benchPair(b *testing.B, jm protocol.JobManagerGateway, tm protocol.TaskManagerGateway) (*ServerSession, *ClientSession) {
	connected := make(chan *ServerSession, 1)
	srv, err := NewServer(ServerConfig{Epoch: 1, JobManager: jm,
		Connected: func(_ Registration, ss *ServerSession) { connected <- ss }, Ended: func(SessionEnd) {}})
	if err != nil {
		b.Fatal(err)
	}
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cs, err := Connect(context.Background(), ClientConfig{JobManager: addr.String(), TaskManager: tm,
		Registration: Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-bench", Slots: 1}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cs.Close)
	return <-connected, cs
}

// BenchmarkSession measures a small message through a real socket on
// loopback: Throughput streams TaskStateUpdates from a TaskManager to the
// JobManager (msgs/s); RoundTrip is a TriggerCheckpoint answered by an
// acknowledgement (the latency of one message each way).
func BenchmarkSession(b *testing.B) {
	exec := protocol.ExecutionID{Job: "0123456789abcdef0123456789abcdef", Vertex: 3, Subtask: 17, Attempt: 1}
	b.Run("Throughput", func(b *testing.B) {
		const batch = 1000
		jm := &countJM{n: batch, tick: make(chan struct{}, 1)}
		_, cs := benchPair(b, jm, nopTM{})
		u := protocol.TaskStateUpdate{Exec: exec, State: protocol.TaskRunning}
		b.ReportAllocs()
		start := time.Now()
		n := 0
		for b.Loop() {
			cs.UpdateTaskState(u)
			if n++; n%batch == 0 {
				<-jm.tick // at most one batch in flight: no queue bound reached
			}
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("RoundTrip", func(b *testing.B) {
		jm := &ackJM{acks: make(chan struct{}, 1)}
		tm := &echoTM{}
		ss, cs := benchPair(b, jm, tm)
		tm.jm = cs
		tc := protocol.TriggerCheckpoint{Exec: exec, ID: 42, Timestamp: 1733480000000}
		b.ReportAllocs()
		for b.Loop() {
			ss.TriggerCheckpoint(tc)
			<-jm.acks
		}
	})
}

type nopJM struct{}

func (nopJM) UpdateTaskState(protocol.TaskStateUpdate)             {}
func (nopJM) AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint) {}
func (nopJM) DeclineCheckpoint(protocol.DeclineCheckpoint)         {}
func (nopJM) SendEvent(protocol.OperatorEvent)                     {}
func (nopJM) SourceEnded(protocol.SourceEnded)                     {}
func (nopJM) ReportTaskStats(protocol.TaskStatsReport)             {}
func (nopJM) Heartbeat(protocol.Heartbeat)                         {}
func (nopJM) Deregister(protocol.Deregister)                       {}

type nopTM struct{}

func (nopTM) SubmitTask(protocol.Deployment)               {}
func (nopTM) CancelTask(protocol.ExecutionID)              {}
func (nopTM) TriggerCheckpoint(protocol.TriggerCheckpoint) {}
func (nopTM) NotifyCheckpoint(protocol.NotifyCheckpoint)   {}
func (nopTM) SendEvent(protocol.OperatorEvent)             {}
func (nopTM) ReleaseJob(protocol.ReleaseJob)               {}
func (nopTM) DeployAttempt(protocol.DeployAttempt)         {}
func (nopTM) RegisterJob(protocol.RegisterJob)             {}
func (nopTM) HeartbeatReply(protocol.HeartbeatReply)       {}
