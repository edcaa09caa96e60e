package jobmanager

import (
	"fmt"
	"sync"

	"github.com/weirhq/weir/internal/protocol"
)

// taskManager is the JobManager's link to one TaskManager: what it
// registered, what the JobManager booked of it, and its outbox.
//
// No gateway call is made with jm.mu held. Code under jm.mu queues its
// messages with send, in the order it decides them; one goroutine at a
// time per TaskManager delivers them, in that order, without jm.mu. So a
// TaskManager may answer at once, even from inside the call, and one that
// is slow delays only its own messages.
type taskManager struct {
	reg protocol.TaskManagerRegistration
	gw  protocol.TaskManagerGateway
	// free slots and netReserved (bytes of network memory the result
	// partitions of its jobs' subtasks need at least) are guarded by jm.mu.
	free        int
	netReserved int64
	// lost: the TaskManager was lost (TaskManagerLost); nothing more is
	// sent to it. Guarded by jm.mu.
	lost bool

	mu      sync.Mutex // guards queue, sending and seqs; never held while delivering
	queue   []envelope
	sending bool
	// seqs are the session seqs of the deployments delivered, when the
	// gateway numbers its messages (heartbeat.go).
	seqs map[ExecutionID]uint64
}

// envelope is one queued message: a protocol.Deployment, CancelTask,
// TriggerCheckpoint, NotifyCheckpoint, OperatorEvent, ReleaseJob or
// HeartbeatReply.
type envelope struct {
	msg any
	// sent, if not nil, is closed once the message was delivered.
	sent chan struct{}
}

// send queues msg for the TaskManager.
func (t *taskManager) send(msg any) { t.sendNotify(msg, nil) }

// sendNotify queues msg and closes sent once it was delivered (at once
// for a lost TaskManager, to which nothing is sent). Called with jm.mu held.
func (t *taskManager) sendNotify(msg any, sent chan struct{}) {
	if t.lost {
		if sent != nil {
			close(sent)
		}
		return
	}
	t.mu.Lock()
	t.queue = append(t.queue, envelope{msg: msg, sent: sent})
	start := !t.sending
	t.sending = true
	t.mu.Unlock()
	if start {
		go t.deliver()
	}
}

// deliver sends the queued messages until none is left.
func (t *taskManager) deliver() {
	for {
		t.mu.Lock()
		batch := t.queue
		t.queue = nil
		if len(batch) == 0 {
			t.sending = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		for _, e := range batch {
			t.call(e.msg)
			if e.sent != nil {
				close(e.sent)
			}
		}
	}
}

// call makes the gateway call that carries msg.
func (t *taskManager) call(msg any) {
	switch m := msg.(type) {
	case protocol.Deployment:
		t.gw.SubmitTask(m)
		t.noteSent(m.Exec)
	case protocol.CancelTask:
		t.gw.CancelTask(m.Exec)
	case protocol.TriggerCheckpoint:
		t.gw.TriggerCheckpoint(m)
	case protocol.NotifyCheckpoint:
		t.gw.NotifyCheckpoint(m)
	case protocol.OperatorEvent:
		t.gw.SendEvent(m)
	case protocol.ReleaseJob:
		t.gw.ReleaseJob(m)
	case protocol.RegisterJob:
		t.gw.RegisterJob(m)
	case protocol.HeartbeatReply:
		t.gw.HeartbeatReply(m)
	case protocol.DeployAttempt:
		t.gw.DeployAttempt(m)
	default:
		panic(fmt.Sprintf("jobmanager: no TaskManagerGateway call carries a %T", msg))
	}
}

// mutex is the JobManager's lock: a sync.Mutex that also tells lockHook,
// when a test set it, when it is taken and released, so that the test can
// check that no gateway call is made under it.
type mutex struct{ sync.Mutex }

// lockHook, set by tests before any JobManager runs, is called on the
// locking goroutine with true right after jm.mu is taken and with false
// right before it is released.
var lockHook func(held bool)

func (m *mutex) Lock() {
	m.Mutex.Lock()
	if lockHook != nil {
		lockHook(true)
	}
}

func (m *mutex) Unlock() {
	if lockHook != nil {
		lockHook(false)
	}
	m.Mutex.Unlock()
}
