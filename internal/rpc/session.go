package rpc

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc/weirpb"
)

// ErrSessionEnded is returned by Send on a session that has ended; it wraps
// the session's cause.
var ErrSessionEnded = errors.New("rpc: the session has ended")

// stream is one side of a Session call: the handler's and the client's
// bidirectional streams both have these methods.
type stream interface {
	Send(*weirpb.Envelope) error
	Receive() (*weirpb.Envelope, error)
}

// closeGrace bounds how long a closing session drains its queue into a
// peer that stopped reading before its transport is torn down.
const closeGrace = 5 * time.Second

// outgoing is one queued message.
type outgoing struct {
	seq   uint64
	frame []byte
}

// session is what both sides of a Session stream share: a bounded send
// queue drained in order by one writer goroutine, a reader goroutine that
// fences, checks the sequence, decodes and delivers, and the end, decided
// once.
//
// Ordering: a message's seq is assigned under mu in the order Send calls
// take mu, and the writer writes in seq order; the reader delivers in the
// order it reads. So the messages one goroutine sends arrive in its order,
// and messages of several goroutines in the order their Sends took mu.
type session struct {
	fence Fence
	tm    string // the TaskManager's id
	peer  string // "the JobManager" or "TaskManager <id>", for messages
	lim   Limits
	log   *slog.Logger
	// deliver hands one received message to the local gateway; an error
	// (a kind this side does not receive) ends the session.
	deliver func(protocol.Message) error
	// dropped counts fenced messages (the owner's counter).
	dropped *atomic.Uint64
	// abort tears the transport down (closes the connection or cancels
	// the call), so a writer or reader blocked on it returns.
	abort func()
	// connErr returns the error that ended the connection, if one did.
	connErr func() error
	// halfClose ends this side's direction cleanly after a graceful
	// drain (the client's CloseRequest); nil on the server, whose handler
	// returning does it.
	halfClose func() error
	// ended is called once with the session's end, after the reader and
	// the writer have stopped.
	ended func(SessionEnd)

	mu          sync.Mutex // guards queue, queuedBytes, seq, end, graceful
	queue       []outgoing
	queuedBytes int64
	seq         uint64 // the last seq assigned
	end         *SessionEnd
	graceful    bool // the end lets the writer drain the queue first

	wake       chan struct{} // a message was queued (capacity 1)
	ending     chan struct{} // closed when end is set
	writerDone chan struct{} // closed when the writer returned
	readerDone chan struct{} // closed when the reader returned
	done       chan struct{} // closed after ended was called
	received   atomic.Uint64 // the last seq delivered
}

func newSession(fence Fence, tm, peer string, lim Limits, log *slog.Logger, dropped *atomic.Uint64) *session {
	return &session{
		fence: fence, tm: tm, peer: peer, lim: lim, log: log, dropped: dropped,
		wake: make(chan struct{}, 1), ending: make(chan struct{}), writerDone: make(chan struct{}),
		readerDone: make(chan struct{}), done: make(chan struct{}),
	}
}

// send encodes m and queues it. It fails, without queuing, when m does not
// encode within rpc.max-message-size, when the session has ended
// (ErrSessionEnded), and when a send queue bound is exceeded, which also
// ends the session.
func (s *session) send(m protocol.Message) error {
	frame, err := protocol.AppendEncode(nil, m)
	if err != nil {
		return fmt.Errorf("rpc: sending to %s: %w", s.peer, err)
	}
	if len(frame) > s.lim.MaxMessageSize {
		return fmt.Errorf("rpc: sending to %s: a %s message of %d bytes, more than %s (%d bytes)",
			s.peer, m.Kind(), len(frame), SettingMaxMessageSize, s.lim.MaxMessageSize)
	}
	s.mu.Lock()
	if s.end != nil {
		cause := s.end.Cause
		s.mu.Unlock()
		return fmt.Errorf("%w (%v)", ErrSessionEnded, cause)
	}
	if len(s.queue) >= s.lim.SendQueueMessages {
		err := fmt.Errorf("rpc: sending a %s message to %s: %d messages are queued, the bound %s; %s is not reading its stream",
			m.Kind(), s.peer, len(s.queue), SettingSendQueueMessages, s.peer)
		s.endLocked(err, false, false)
		s.mu.Unlock()
		return err
	}
	if len(s.queue) > 0 && s.queuedBytes+int64(len(frame)) > s.lim.SendQueueBytes {
		err := fmt.Errorf("rpc: sending a %s message of %d bytes to %s: %d bytes are queued, and %s is %d; %s is not reading its stream",
			m.Kind(), len(frame), s.peer, s.queuedBytes, SettingSendQueueBytes, s.lim.SendQueueBytes, s.peer)
		s.endLocked(err, false, false)
		s.mu.Unlock()
		return err
	}
	s.seq++
	s.queue = append(s.queue, outgoing{seq: s.seq, frame: frame})
	s.queuedBytes += int64(len(frame))
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// call is send for the one-way gateway methods: a message that cannot be
// sent ends the session with the error, which its end reports; one sent on
// an ended session is dropped, as the end was reported already.
func (s *session) call(m protocol.Message) {
	err := s.send(m)
	if err == nil || errors.Is(err, ErrSessionEnded) {
		return
	}
	s.fail(err, false)
}

// fail ends the session at once (the queue is dropped).
func (s *session) fail(cause error, byPeer bool) {
	s.mu.Lock()
	s.endLocked(cause, byPeer, false)
	s.mu.Unlock()
}

// close ends the session after the writer drained what is queued.
func (s *session) close(cause error) {
	s.mu.Lock()
	s.endLocked(cause, false, true)
	s.mu.Unlock()
}

// endLocked decides the end once; later causes are ignored.
func (s *session) endLocked(cause error, byPeer, graceful bool) {
	if s.end != nil {
		return
	}
	s.end = &SessionEnd{TaskManager: s.tm, Session: s.fence.Session, Cause: cause, ByPeer: byPeer}
	s.graceful = graceful
	if !graceful {
		s.queue, s.queuedBytes = nil, 0
	}
	close(s.ending)
}

func (s *session) ended0() *SessionEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// run starts the writer and the reader on st. The owner then waits for
// ending, calls stop, and ends the call.
func (s *session) run(st stream) {
	go s.write(st)
	go s.read(st)
	go func() {
		<-s.readerDone
		<-s.writerDone
		s.ended(*s.ended0())
		close(s.done)
	}()
}

// stop waits for the writer after the end: up to closeGrace for a graceful
// end's drain, then it aborts the transport.
func (s *session) stop() {
	<-s.ending
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-s.writerDone:
	case <-t.C:
		s.abort()
		<-s.writerDone
	}
}

// write writes the queue in order until the session ends; on a graceful
// end it writes what is queued first and half-closes.
func (s *session) write(st stream) {
	defer close(s.writerDone)
	env := &weirpb.Envelope{Epoch: s.fence.Epoch, Session: s.fence.Session}
	for {
		s.mu.Lock()
		batch, ending, graceful := s.queue, s.end != nil, s.graceful
		s.queue, s.queuedBytes = nil, 0
		s.mu.Unlock()
		if ending && !graceful {
			return
		}
		for _, o := range batch {
			env.Seq, env.Frame = o.seq, o.frame
			if err := st.Send(env); err != nil {
				s.sendFailed(err)
				return
			}
		}
		if ending {
			if s.halfClose != nil {
				s.halfClose()
			}
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.ending:
		}
	}
}

// sendFailed ends the session on a write error. A client's Send returns an
// error wrapping io.EOF when the server ended the stream: the reader then
// learns why, so the end is left to it; the abort after closeGrace (stop)
// bounds the wait.
func (s *session) sendFailed(err error) {
	if errors.Is(err, io.EOF) {
		go func() {
			t := time.NewTimer(closeGrace)
			defer t.Stop()
			select {
			case <-s.ending:
			case <-t.C:
				s.fail(fmt.Errorf("rpc: writing to %s: %w", s.peer, err), true)
			}
		}()
		return
	}
	cause, byPeer := s.streamEnd(err)
	s.fail(cause, byPeer)
}

// read delivers what arrives, in order, until the stream fails or the
// session ends.
func (s *session) read(st stream) {
	defer close(s.readerDone)
	for {
		env, err := st.Receive()
		if err != nil {
			cause, byPeer := s.streamEnd(err)
			s.fail(cause, byPeer)
			return
		}
		select {
		case <-s.ending:
			return
		default:
		}
		if err := s.fence.Check(env.GetEpoch(), env.GetSession()); err != nil {
			n := s.dropped.Add(1)
			s.log.Warn("rpc: dropped a message of another session", "from", s.peer, "session", s.fence.Session,
				"reason", err.Error(), "dropped", n)
			continue
		}
		if want := s.received.Load() + 1; env.GetSeq() != want {
			s.fail(fmt.Errorf("rpc: %s sent message %d of session %s where %d was due", s.peer, env.GetSeq(), s.fence.Session, want), false)
			return
		}
		m, err := protocol.Decode(env.GetFrame())
		if err != nil {
			s.fail(fmt.Errorf("rpc: message %d from %s: %w", env.GetSeq(), s.peer, err), false)
			return
		}
		if err := s.deliver(m); err != nil {
			s.fail(fmt.Errorf("rpc: message %d from %s: %w", env.GetSeq(), s.peer, err), false)
			return
		}
		s.received.Store(env.GetSeq())
	}
}

// streamEnd says how the stream's failure with err ended the session.
func (s *session) streamEnd(err error) (error, bool) {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("rpc: %s closed session %s", s.peer, s.fence.Session), true
	}
	if connect.IsWireError(err) {
		return fmt.Errorf("rpc: %s ended session %s: %w", s.peer, s.fence.Session, err), true
	}
	if connect.CodeOf(err) == connect.CodeResourceExhausted {
		return fmt.Errorf("rpc: session %s: %s sent a message larger than this side's %s (%d bytes): %w",
			s.fence.Session, s.peer, SettingMaxMessageSize, s.lim.MaxMessageSize, err), false
	}
	if cerr := s.connErr(); cerr != nil {
		cause, byPeer := connEnd(cerr, s.peer)
		return fmt.Errorf("rpc: session %s: %w", s.fence.Session, cause), byPeer
	}
	return fmt.Errorf("rpc: session %s with %s: %w", s.fence.Session, s.peer, err), true
}
