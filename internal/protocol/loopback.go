package protocol

import (
	"fmt"
	"sync"
)

// The loopback transport connects a JobManager and TaskManagers in one
// process as a network would: every call is encoded into a frame and the
// other side gets a fresh decoded copy, so the two sides
// share no memory and every local run exercises the encoding.
//
// A message that does not encode or decode here is a bug (every message
// kind round-trips in this package's tests, and control messages are far
// below MaxFrameSize), so the calls, all one-way, panic with the error.

// frames recycles the loopback's frame buffers: Decode copies what it
// keeps, so a buffer is free again as soon as its message is decoded.
// Buffers that grew past maxPooledFrame (a deployment with large operator
// state) are left to the garbage collector.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooledFrame = 64 << 10

// roundTrip encodes m and decodes it again.
func roundTrip[M Message](m M) (M, error) {
	bp := frames.Get().(*[]byte)
	b, err := AppendEncode((*bp)[:0], m)
	if cap(b) <= maxPooledFrame {
		*bp = b
		defer frames.Put(bp)
	}
	if err != nil {
		var zero M
		return zero, err
	}
	d, err := Decode(b)
	if err != nil {
		var zero M
		return zero, err
	}
	c, ok := d.(M)
	if !ok {
		return c, fmt.Errorf("protocol: a %s message decoded as %T", m.Kind(), d)
	}
	return c, nil
}

// mustRoundTrip is roundTrip for calls that cannot return an error.
func mustRoundTrip[M Message](m M) M {
	c, err := roundTrip(m)
	if err != nil {
		panic(fmt.Sprintf("loopback transport: %v", err))
	}
	return c
}

// LoopbackTaskManager is how a JobManager reaches a TaskManager of its own
// process: a TaskManagerGateway that passes every call through the
// encoding.
type LoopbackTaskManager struct {
	tm TaskManagerGateway
}

var _ TaskManagerGateway = (*LoopbackTaskManager)(nil)

// NewLoopbackTaskManager wraps tm.
func NewLoopbackTaskManager(tm TaskManagerGateway) *LoopbackTaskManager {
	return &LoopbackTaskManager{tm: tm}
}

// LoopbackRegistration is a TaskManager's registration as the JobManager
// of its process receives it: encoded and decoded.
func LoopbackRegistration(r TaskManagerRegistration) TaskManagerRegistration {
	return mustRoundTrip(r)
}

// SubmitTask implements TaskManagerGateway.
func (l *LoopbackTaskManager) SubmitTask(d Deployment) { l.tm.SubmitTask(mustRoundTrip(d)) }

// CancelTask implements TaskManagerGateway.
func (l *LoopbackTaskManager) CancelTask(e ExecutionID) {
	l.tm.CancelTask(mustRoundTrip(CancelTask{Exec: e}).Exec)
}

// TriggerCheckpoint implements TaskManagerGateway.
func (l *LoopbackTaskManager) TriggerCheckpoint(t TriggerCheckpoint) {
	l.tm.TriggerCheckpoint(mustRoundTrip(t))
}

// NotifyCheckpoint implements TaskManagerGateway.
func (l *LoopbackTaskManager) NotifyCheckpoint(n NotifyCheckpoint) {
	l.tm.NotifyCheckpoint(mustRoundTrip(n))
}

// SendEvent implements TaskManagerGateway.
func (l *LoopbackTaskManager) SendEvent(e OperatorEvent) { l.tm.SendEvent(mustRoundTrip(e)) }

// RegisterJob implements TaskManagerGateway.
func (l *LoopbackTaskManager) RegisterJob(j RegisterJob) { l.tm.RegisterJob(mustRoundTrip(j)) }

// DeployAttempt implements TaskManagerGateway.
func (l *LoopbackTaskManager) DeployAttempt(a DeployAttempt) { l.tm.DeployAttempt(mustRoundTrip(a)) }

// ReleaseJob implements TaskManagerGateway.
func (l *LoopbackTaskManager) ReleaseJob(r ReleaseJob) { l.tm.ReleaseJob(mustRoundTrip(r)) }

// HeartbeatReply implements TaskManagerGateway.
func (l *LoopbackTaskManager) HeartbeatReply(r HeartbeatReply) { l.tm.HeartbeatReply(mustRoundTrip(r)) }

// LoopbackJobManager is how a TaskManager reaches the JobManager of its own
// process: a JobManagerGateway that passes every call through the encoding.
type LoopbackJobManager struct {
	jm JobManagerGateway
}

var _ JobManagerGateway = (*LoopbackJobManager)(nil)

// NewLoopbackJobManager wraps jm.
func NewLoopbackJobManager(jm JobManagerGateway) *LoopbackJobManager {
	return &LoopbackJobManager{jm: jm}
}

// UpdateTaskState implements JobManagerGateway.
func (l *LoopbackJobManager) UpdateTaskState(u TaskStateUpdate) {
	l.jm.UpdateTaskState(mustRoundTrip(u))
}

// AcknowledgeCheckpoint implements JobManagerGateway.
func (l *LoopbackJobManager) AcknowledgeCheckpoint(a AcknowledgeCheckpoint) {
	l.jm.AcknowledgeCheckpoint(mustRoundTrip(a))
}

// DeclineCheckpoint implements JobManagerGateway.
func (l *LoopbackJobManager) DeclineCheckpoint(d DeclineCheckpoint) {
	l.jm.DeclineCheckpoint(mustRoundTrip(d))
}

// SendEvent implements JobManagerGateway.
func (l *LoopbackJobManager) SendEvent(e OperatorEvent) { l.jm.SendEvent(mustRoundTrip(e)) }

// SourceEnded implements JobManagerGateway.
func (l *LoopbackJobManager) SourceEnded(s SourceEnded) { l.jm.SourceEnded(mustRoundTrip(s)) }

// ReportTaskStats implements JobManagerGateway.
func (l *LoopbackJobManager) ReportTaskStats(r TaskStatsReport) {
	l.jm.ReportTaskStats(mustRoundTrip(r))
}

// Heartbeat implements JobManagerGateway.
func (l *LoopbackJobManager) Heartbeat(h Heartbeat) { l.jm.Heartbeat(mustRoundTrip(h)) }

// Deregister implements JobManagerGateway.
func (l *LoopbackJobManager) Deregister(d Deregister) { l.jm.Deregister(mustRoundTrip(d)) }
