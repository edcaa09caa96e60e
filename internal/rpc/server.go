package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc/weirpb"
	"github.com/weirhq/weir/internal/rpc/weirpb/weirpbconnect"
)

// SessionHeader carries the session id on a Session call.
const SessionHeader = "Weir-Session"

// ServerConfig configures the JobManager's side.
type ServerConfig struct {
	// Epoch is the JobManager's leader epoch, stamped on every message and
	// required on every message received (1 until high availability).
	Epoch uint64
	// JobManager receives every TaskManager's messages, each session's in
	// the order its TaskManager sent them. Required.
	JobManager protocol.JobManagerGateway
	// Admit, if set, decides a registration: an error refuses it, and the
	// TaskManager is told not to retry (ErrRefused, with the error's text).
	Admit func(Registration) error
	// Connected is called when a registered TaskManager opens its session,
	// before any of its messages is delivered: ss is the TaskManager's
	// gateway. Required.
	Connected func(reg Registration, ss *ServerSession)
	// Ended is called once for each session Connected was called for,
	// after its last message was delivered. Required.
	Ended func(SessionEnd)
	// Jobs, if set, serves SubmitJob (session mode); without it SubmitJob
	// answers Unimplemented.
	Jobs *Jobs
	// Application, if set, serves Application (application mode); without
	// it Application answers FailedPrecondition.
	Application *Application
	Limits      Limits
	TCP         TCP
	Logger      *slog.Logger
}

// Server is the JobManager's side of the control plane: it serves
// JobManagerService over h2c (New, Start or Handler, Close).
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	path    string
	handler http.Handler
	dropped atomic.Uint64

	mu       sync.Mutex                // guards pending, sessions, byTM, closed, srv
	pending  map[string]Registration   // registered, no session yet; by session id
	sessions map[string]*ServerSession // open; by session id
	byTM     map[string]string         // TaskManager id -> its latest session id
	closed   bool
	srv      *http.Server
	served   sync.WaitGroup
}

// NewServer checks cfg and returns a server that serves nothing yet.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.JobManager == nil || cfg.Connected == nil || cfg.Ended == nil {
		return nil, errors.New("rpc: ServerConfig needs JobManager, Connected and Ended")
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	cfg.TCP = cfg.TCP.withDefaults()
	s := &Server{cfg: cfg, log: logger(cfg.Logger), pending: map[string]Registration{},
		sessions: map[string]*ServerSession{}, byTM: map[string]string{}}
	s.path, s.handler = weirpbconnect.NewJobManagerServiceHandler(handler{s},
		connect.WithReadMaxBytes(cfg.Limits.readMax()), connect.WithSendMaxBytes(cfg.Limits.readMax()),
		connect.WithCompression("gzip", nil, nil)) // control messages are small: no gzip
	return s, nil
}

// Handler is the service's path prefix and handler, for a mux of one's
// own. It needs HTTP/2 (h2c or TLS); Start serves it alone.
func (s *Server) Handler() (string, http.Handler) { return s.path, s.handler }

// Dropped counts the messages of another epoch or session dropped.
func (s *Server) Dropped() uint64 { return s.dropped.Load() }

// Start listens on address (host:port; port 0 picks one) with the
// configured socket options and serves h2c there until Close. It returns
// the address bound.
func (s *Server) Start(address string) (net.Addr, error) {
	l, err := Listen(context.Background(), address, s.cfg.TCP)
	if err != nil {
		return nil, err
	}
	if err := s.Serve(l); err != nil {
		l.Close()
		return nil, err
	}
	return l.Addr(), nil
}

// Serve serves h2c on l in the background until Close (l's connections
// get no socket options of the server's: Listen's listener has them).
func (s *Server) Serve(l net.Listener) error {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	mux := http.NewServeMux()
	mux.Handle(s.path, s.handler)
	srv := &http.Server{
		Handler:           mux,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*trackedConn); ok {
				return context.WithValue(ctx, connKey{}, tc)
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.closed || s.srv != nil {
		s.mu.Unlock()
		return errors.New("rpc: the server is closed or already serving")
	}
	s.srv = srv
	s.mu.Unlock()
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		if err := srv.Serve(trackingListener{l}); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("rpc: serving the control plane stopped", "address", l.Addr().String(), "err", err.Error())
		}
	}()
	return nil
}

// Close ends every session (each TaskManager sees "the JobManager is
// shutting down" after what was queued for it), waits until their ends were
// reported, and stops serving.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	open := make([]*ServerSession, 0, len(s.sessions))
	for _, ss := range s.sessions {
		open = append(open, ss)
	}
	srv := s.srv
	s.mu.Unlock()
	for _, ss := range open {
		ss.s.close(errors.New("the JobManager is shutting down"))
	}
	for _, ss := range open {
		<-ss.s.done
	}
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	s.served.Wait()
	return err
}

type connKey struct{}

// handler implements the generated service interface; it is unexported
// so that Server's methods stay its own.
type handler struct{ s *Server }

// Register admits a TaskManager: a registration under the id of a
// registered one replaces it, and its open session ends.
func (h handler) Register(ctx context.Context, req *connect.Request[weirpb.RegisterRequest]) (*connect.Response[weirpb.RegisterReply], error) {
	s := h.s
	m, err := protocol.Decode(req.Msg.GetRegistration())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("rpc: a registration: %w", err))
	}
	tr, ok := m.(protocol.TaskManagerRegistration)
	if !ok {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("rpc: a registration carried a %s message", m.Kind()))
	}
	if tr.ID == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("rpc: a registration without a TaskManager id"))
	}
	reg := Registration{TaskManagerRegistration: tr, DataAddress: req.Msg.GetDataAddress(), BuildID: req.Msg.GetBuildId(),
		Application: req.Msg.GetApplication()}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(reg); err != nil {
			s.log.Warn("rpc: refused a TaskManager", "taskmanager", tr.ID, "err", err.Error())
			return nil, connect.NewError(connect.CodeFailedPrecondition, err)
		}
	}
	id := newSessionID()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("rpc: the JobManager is shutting down"))
	}
	old := s.byTM[tr.ID]
	delete(s.pending, old)
	replaced := s.sessions[old]
	s.pending[id] = reg
	s.byTM[tr.ID] = id
	s.mu.Unlock()
	if replaced != nil {
		replaced.s.fail(fmt.Errorf("rpc: TaskManager %s registered again (session %s)", tr.ID, id), true)
	}
	s.log.Info("rpc: TaskManager registered", "taskmanager", tr.ID, "session", id, "slots", tr.Slots, "data", reg.DataAddress)
	return connect.NewResponse(&weirpb.RegisterReply{Epoch: s.cfg.Epoch, Session: id}), nil
}

// Session serves one registered TaskManager's stream until the session
// ends.
func (h handler) Session(ctx context.Context, st *connect.BidiStream[weirpb.Envelope, weirpb.Envelope]) error {
	s := h.s
	id := st.RequestHeader().Get(SessionHeader)
	tc, _ := ctx.Value(connKey{}).(*trackedConn)
	ss := &ServerSession{}
	s.mu.Lock()
	reg, ok := s.pending[id]
	closed := s.closed
	if ok && !closed {
		delete(s.pending, id)
		ss.reg = reg
		ss.s = newSession(Fence{Epoch: s.cfg.Epoch, Session: id}, reg.ID, "TaskManager "+reg.ID, s.cfg.Limits, s.log, &s.dropped)
		s.sessions[id] = ss
	}
	s.mu.Unlock()
	if closed {
		return connect.NewError(connect.CodeUnavailable, errors.New("rpc: the JobManager is shutting down"))
	}
	if !ok {
		return connect.NewError(connect.CodeFailedPrecondition,
			fmt.Errorf("rpc: no registration awaits a session %.64q (register first; a newer registration of the same TaskManager replaces an older one)", id))
	}
	ss.s.deliver = deliverToJobManager(s.cfg.JobManager)
	ss.s.connErr = tc.err
	ss.s.abort = func() {
		if tc != nil {
			tc.Close()
		}
	}
	ss.s.ended = func(e SessionEnd) {
		s.mu.Lock()
		if s.sessions[id] == ss {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
		s.log.Info("rpc: session ended", "taskmanager", e.TaskManager, "session", e.Session, "by_peer", e.ByPeer, "cause", e.Cause.Error())
		s.cfg.Ended(e)
	}
	s.cfg.Connected(reg, ss)
	ss.s.run(st)
	ss.s.stop()
	ss.s.mu.Lock()
	end, graceful := *ss.s.end, ss.s.graceful
	ss.s.mu.Unlock()
	if end.ByPeer {
		return nil
	}
	code := connect.CodeAborted
	if graceful {
		code = connect.CodeUnavailable
	}
	return connect.NewError(code, end.Cause)
}

func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
