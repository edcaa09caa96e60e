package rpc

import (
	"fmt"

	"github.com/weirhq/weir/internal/protocol"
)

// deliverToTaskManager hands a message the JobManager sent to tm.
func deliverToTaskManager(tm protocol.TaskManagerGateway) func(protocol.Message) error {
	return func(m protocol.Message) error {
		switch m := m.(type) {
		case protocol.Deployment:
			tm.SubmitTask(m)
		case protocol.CancelTask:
			tm.CancelTask(m.Exec)
		case protocol.TriggerCheckpoint:
			tm.TriggerCheckpoint(m)
		case protocol.NotifyCheckpoint:
			tm.NotifyCheckpoint(m)
		case protocol.OperatorEvent:
			tm.SendEvent(m)
		case protocol.ReleaseJob:
			tm.ReleaseJob(m)
		case protocol.RegisterJob:
			tm.RegisterJob(m)
		case protocol.HeartbeatReply:
			tm.HeartbeatReply(m)
		case protocol.DeployAttempt:
			tm.DeployAttempt(m)
		default:
			return fmt.Errorf("a %s message, which a JobManager does not send", m.Kind())
		}
		return nil
	}
}

// deliverToJobManager hands a message a TaskManager sent to jm.
func deliverToJobManager(jm protocol.JobManagerGateway) func(protocol.Message) error {
	return func(m protocol.Message) error {
		switch m := m.(type) {
		case protocol.TaskStateUpdate:
			jm.UpdateTaskState(m)
		case protocol.AcknowledgeCheckpoint:
			jm.AcknowledgeCheckpoint(m)
		case protocol.DeclineCheckpoint:
			jm.DeclineCheckpoint(m)
		case protocol.OperatorEvent:
			jm.SendEvent(m)
		case protocol.SourceEnded:
			jm.SourceEnded(m)
		case protocol.TaskStatsReport:
			jm.ReportTaskStats(m)
		case protocol.Heartbeat:
			jm.Heartbeat(m)
		case protocol.Deregister:
			jm.Deregister(m)
		default:
			return fmt.Errorf("a %s message, which a TaskManager does not send", m.Kind())
		}
		return nil
	}
}

// ServerSession is the JobManager's side of one TaskManager's session: a
// protocol.TaskManagerGateway whose calls are queued and written in order.
// A call that cannot be sent (larger than rpc.max-message-size, or beyond
// the send queue's bounds) ends the session with the error as its cause; a
// call on an ended session is dropped, its end having been reported.
type ServerSession struct {
	s   *session
	reg Registration
}

var _ protocol.TaskManagerGateway = (*ServerSession)(nil)

// Registration is what the TaskManager registered with.
func (ss *ServerSession) Registration() Registration { return ss.reg }

// ID is the session's id.
func (ss *ServerSession) ID() string { return ss.s.fence.Session }

// Send queues m for the TaskManager, or says why it cannot (see
// session.send): the error-returning form of the gateway's calls.
func (ss *ServerSession) Send(m protocol.Message) error { return ss.s.send(m) }

// Received is the seq of the last message of the TaskManager delivered.
func (ss *ServerSession) Received() uint64 { return ss.s.received.Load() }

// Close ends the session after writing what is queued; the TaskManager
// sees it end with cause.
func (ss *ServerSession) Close(cause error) { ss.s.close(cause) }

// Done is closed once the session's end was reported.
func (ss *ServerSession) Done() <-chan struct{} { return ss.s.done }

// SubmitTask implements protocol.TaskManagerGateway.
func (ss *ServerSession) SubmitTask(d protocol.Deployment) { ss.s.call(d) }

// CancelTask implements protocol.TaskManagerGateway.
func (ss *ServerSession) CancelTask(e protocol.ExecutionID) { ss.s.call(protocol.CancelTask{Exec: e}) }

// TriggerCheckpoint implements protocol.TaskManagerGateway.
func (ss *ServerSession) TriggerCheckpoint(t protocol.TriggerCheckpoint) { ss.s.call(t) }

// NotifyCheckpoint implements protocol.TaskManagerGateway.
func (ss *ServerSession) NotifyCheckpoint(n protocol.NotifyCheckpoint) { ss.s.call(n) }

// SendEvent implements protocol.TaskManagerGateway.
func (ss *ServerSession) SendEvent(e protocol.OperatorEvent) { ss.s.call(e) }

// RegisterJob implements protocol.TaskManagerGateway.
func (ss *ServerSession) RegisterJob(j protocol.RegisterJob) { ss.s.call(j) }

// ReleaseJob implements protocol.TaskManagerGateway.
func (ss *ServerSession) ReleaseJob(r protocol.ReleaseJob) { ss.s.call(r) }

// HeartbeatReply implements protocol.TaskManagerGateway.
func (ss *ServerSession) HeartbeatReply(r protocol.HeartbeatReply) { ss.s.call(r) }

// Sent is the seq of the last message queued for the TaskManager: right
// after a call, that call's (when one goroutine makes the calls).
func (ss *ServerSession) Sent() uint64 {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	return ss.s.seq
}

// DeployAttempt implements protocol.TaskManagerGateway.
func (ss *ServerSession) DeployAttempt(a protocol.DeployAttempt) { ss.s.call(a) }

// ClientSession is a TaskManager's session with the JobManager: a
// protocol.JobManagerGateway whose calls are queued and written in order,
// with the same rules as ServerSession's.
type ClientSession struct {
	s *session
}

var _ protocol.JobManagerGateway = (*ClientSession)(nil)

// Fence is the session's epoch and id, as Register gave them.
func (cs *ClientSession) Fence() Fence { return cs.s.fence }

// Send queues m for the JobManager, or says why it cannot.
func (cs *ClientSession) Send(m protocol.Message) error { return cs.s.send(m) }

// Received is the seq of the last message of the JobManager delivered.
func (cs *ClientSession) Received() uint64 { return cs.s.received.Load() }

// Dropped counts the messages of another epoch or session dropped.
func (cs *ClientSession) Dropped() uint64 { return cs.s.dropped.Load() }

// Close ends the session after writing what is queued, and waits until
// its end was reported. The JobManager sees the TaskManager close it.
func (cs *ClientSession) Close() {
	cs.s.close(fmt.Errorf("rpc: TaskManager %s closed session %s", cs.s.tm, cs.s.fence.Session))
	<-cs.s.done
}

// Done is closed once the session's end was reported.
func (cs *ClientSession) Done() <-chan struct{} { return cs.s.done }

// End is the session's end once Done is closed.
func (cs *ClientSession) End() (SessionEnd, bool) {
	select {
	case <-cs.s.done:
		return *cs.s.ended0(), true
	default:
		return SessionEnd{}, false
	}
}

// UpdateTaskState implements protocol.JobManagerGateway.
func (cs *ClientSession) UpdateTaskState(u protocol.TaskStateUpdate) { cs.s.call(u) }

// AcknowledgeCheckpoint implements protocol.JobManagerGateway.
func (cs *ClientSession) AcknowledgeCheckpoint(a protocol.AcknowledgeCheckpoint) { cs.s.call(a) }

// DeclineCheckpoint implements protocol.JobManagerGateway.
func (cs *ClientSession) DeclineCheckpoint(d protocol.DeclineCheckpoint) { cs.s.call(d) }

// SendEvent implements protocol.JobManagerGateway.
func (cs *ClientSession) SendEvent(e protocol.OperatorEvent) { cs.s.call(e) }

// SourceEnded implements protocol.JobManagerGateway.
func (cs *ClientSession) SourceEnded(s protocol.SourceEnded) { cs.s.call(s) }

// ReportTaskStats implements protocol.JobManagerGateway.
func (cs *ClientSession) ReportTaskStats(r protocol.TaskStatsReport) { cs.s.call(r) }

// Heartbeat implements protocol.JobManagerGateway.
func (cs *ClientSession) Heartbeat(h protocol.Heartbeat) { cs.s.call(h) }

// Deregister implements protocol.JobManagerGateway.
func (cs *ClientSession) Deregister(d protocol.Deregister) { cs.s.call(d) }
