package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/rpc/weirpb"
	"github.com/weirhq/weir/internal/rpc/weirpb/weirpbconnect"
)

// LeaderHeader carries, on a standby JobManager's refusal, the leader's RPC
// address (high availability: docs/high-availability.md, decision 6).
const LeaderHeader = "Weir-Leader"

// NotLeaderError is a refusal by a JobManager that does not lead: Leader is
// the leader's RPC address ("" while nobody leads).
type NotLeaderError struct {
	Address, Leader string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return fmt.Sprintf("the JobManager at %s is a standby and no JobManager leads yet", e.Address)
	}
	return fmt.Sprintf("the JobManager at %s is a standby; the leader is at %s", e.Address, e.Leader)
}

// notLeader converts a standby's refusal into a *NotLeaderError, or
// returns nil for any other error.
func notLeader(address string, err error) *NotLeaderError {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnavailable || !strings.HasPrefix(ce.Message(), standbyMessage) {
		return nil
	}
	return &NotLeaderError{Address: address, Leader: ce.Meta().Get(LeaderHeader)}
}

const standbyMessage = "a standby JobManager"

// Standby serves JobManagerService for a JobManager that does not lead:
// every call is refused with the leader's RPC address (leader() gives it,
// "" while nobody leads), which clients and TaskManagers follow.
type Standby struct {
	leader func() string
	log    *slog.Logger
	srv    *http.Server
	done   chan struct{}
}

// StartStandby listens on address and refuses every call there until Close.
func StartStandby(address string, leader func() string, logger *slog.Logger) (*Standby, net.Addr, error) {
	l, err := Listen(context.Background(), address, TCP{}.withDefaults())
	if err != nil {
		return nil, nil, err
	}
	s := &Standby{leader: leader, log: logger, done: make(chan struct{})}
	path, h := weirpbconnect.NewJobManagerServiceHandler(standbyHandler{s})
	mux := http.NewServeMux()
	mux.Handle(path, h)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	s.srv = &http.Server{Handler: mux, Protocols: protocols, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("rpc: the standby's listener stopped", "address", l.Addr().String(), "err", err.Error())
		}
	}()
	return s, l.Addr(), nil
}

// Close stops serving and frees the address (a new leader binds it next).
func (s *Standby) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

func (s *Standby) refuse() error {
	leader := s.leader()
	msg := standbyMessage + " refuses the call"
	if leader != "" {
		msg += "; the leader is at " + leader
	} else {
		msg += "; no JobManager leads yet"
	}
	err := connect.NewError(connect.CodeUnavailable, errors.New(msg))
	err.Meta().Set(LeaderHeader, leader)
	return err
}

type standbyHandler struct {
	s *Standby
}

var _ weirpbconnect.JobManagerServiceHandler = standbyHandler{}

func (h standbyHandler) Register(context.Context, *connect.Request[weirpb.RegisterRequest]) (*connect.Response[weirpb.RegisterReply], error) {
	return nil, h.s.refuse()
}

func (h standbyHandler) Session(context.Context, *connect.BidiStream[weirpb.Envelope, weirpb.Envelope]) error {
	return h.s.refuse()
}

func (h standbyHandler) SubmitJob(context.Context, *connect.Request[weirpb.SubmitRequest], *connect.ServerStream[weirpb.JobUpdate]) error {
	return h.s.refuse()
}

func (h standbyHandler) Application(context.Context, *connect.Request[weirpb.ApplicationRequest], *connect.ServerStream[weirpb.ApplicationUpdate]) error {
	return h.s.refuse()
}

// Addresses splits a list of JobManager addresses ("a:6123,b:6123": every
// JobManager of a cluster with high availability).
func Addresses(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// leaderFollower picks the address of each attempt among a list of
// JobManagers: the leader a standby named, else the next of the list.
type leaderFollower struct {
	mu    sync.Mutex
	addrs []string
	next  int
	hint  string
}

func newLeaderFollower(list string) *leaderFollower {
	return &leaderFollower{addrs: Addresses(list)}
}

// pick returns the address to try now.
func (f *leaderFollower) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := f.hint; h != "" {
		f.hint = ""
		return h
	}
	if len(f.addrs) == 0 {
		return ""
	}
	a := f.addrs[f.next%len(f.addrs)]
	f.next++
	return a
}

// refused notes an attempt's error; it reports whether the next attempt
// should follow a leader named in it at once (no backoff).
func (f *leaderFollower) refused(address string, err error) bool {
	nl := notLeader(address, err)
	if nl == nil || nl.Leader == "" || nl.Leader == address {
		return false
	}
	f.mu.Lock()
	f.hint = nl.Leader
	f.mu.Unlock()
	return true
}
