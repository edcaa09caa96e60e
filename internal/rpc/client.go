package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// ErrRefused is wrapped by Connect's error when the JobManager refused the
// registration (ServerConfig.Admit): registering again cannot help.
var ErrRefused = errors.New("rpc: the JobManager refused the registration")

// ClientConfig configures a TaskManager's side.
type ClientConfig struct {
	// JobManager is the address (host:port) of the JobManager's RPC
	// listener. Required.
	JobManager   string
	Registration Registration
	// TaskManager receives the JobManager's calls, in the order it sent
	// them. Required.
	TaskManager protocol.TaskManagerGateway
	// Ended, if set, is called once with the session's end, after its last
	// message was delivered (ClientSession.Done says the same).
	Ended func(SessionEnd)
	// Dial dials the JobManager; nil means Dialer(TCP).
	Dial    func(ctx context.Context, network, address string) (net.Conn, error)
	Backoff Backoff
	Limits  Limits
	TCP     TCP
	Logger  *slog.Logger
}

// Backoff paces registration attempts: the delay after the n-th failed one
// is Initial doubled n times up to Max, drawn uniformly from its upper
// half. The zero value of a field means its default.
type Backoff struct {
	// Initial is Flink's cluster.registration.initial-timeout (100 ms),
	// Max its cluster.registration.max-timeout (30 s).
	Initial, Max time.Duration
	// Attempt bounds one attempt: dialing, Register and opening the
	// session (10 s).
	Attempt time.Duration
	// Timeout is taskmanager.registration.timeout (5 min): Connect fails
	// when it is not registered by then.
	Timeout time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Attempt <= 0 {
		b.Attempt = 10 * time.Second
	}
	if b.Timeout <= 0 {
		b.Timeout = 5 * time.Minute
	}
	return b
}

// delay is the pause after failed attempt n (from 0).
func (b Backoff) delay(n int, r *rand.Rand) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + time.Duration(r.Int64N(int64(d/2)+1))
}

// client is what one attempt dials with: its own transport, so one
// TCP connection carries Register and the session, and closing it ends
// nothing else.
type client struct {
	cfg       ClientConfig
	transport *http.Transport
	api       weirpbconnect.JobManagerServiceClient

	mu   sync.Mutex // guards conn
	conn *trackedConn
}

// standbyPace is how long after a standby's answer registration retries at
// its first backoff step.
const standbyPace = 15 * time.Second

// Connect registers cfg.Registration with the JobManager, retrying with
// backoff (cfg.Backoff) until it is admitted, refused (ErrRefused), ctx
// ends or the registration timeout passes, then opens the session. ctx
// bounds the registration only; the session lasts until either side ends
// it. A TaskManager whose session ended registers again with a new
// Connect (after fencing itself: decision 13).
func Connect(ctx context.Context, cfg ClientConfig) (*ClientSession, error) {
	if cfg.TaskManager == nil || cfg.JobManager == "" {
		return nil, errors.New("rpc: ClientConfig needs JobManager (an address) and TaskManager")
	}
	if cfg.Registration.ID == "" {
		return nil, errors.New("rpc: ClientConfig.Registration needs the TaskManager's id")
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	cfg.TCP = cfg.TCP.withDefaults()
	if cfg.Dial == nil {
		cfg.Dial = Dialer(cfg.TCP)
	}
	cfg.Backoff = cfg.Backoff.withDefaults()
	log := logger(cfg.Logger)
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	deadline := time.Now().Add(cfg.Backoff.Timeout)
	// cfg.JobManager may list every JobManager of a cluster with high
	// availability: each attempt tries the next, or the leader a standby
	// named (at once, a few times in a row: a leader may have changed
	// again in between).
	jms := newLeaderFollower(cfg.JobManager)
	follows := 0
	var standbyAt time.Time // when a standby last answered
	for n := 0; ; n++ {
		acfg := cfg
		acfg.JobManager = jms.pick()
		cs, err := attempt(ctx, acfg, log)
		if err == nil {
			return cs, nil
		}
		if errors.Is(err, ErrRefused) || ctx.Err() != nil {
			return nil, err
		}
		if notLeader(acfg.JobManager, err) != nil {
			standbyAt = time.Now()
		}
		if jms.refused(acfg.JobManager, err) && follows < 3 {
			follows++
			log.Info("rpc: following the leader", "standby", acfg.JobManager, "err", err.Error())
			n--
			continue
		}
		follows = 0
		if time.Since(standbyAt) < standbyPace {
			// A standby answered lately: the cluster is there and an
			// election is under way (or the leader it names is gone):
			// retry at the first step's pace, so the new leader is found
			// as soon as it leads, not after a grown backoff.
			n = 0
		}
		d := cfg.Backoff.delay(n, r)
		if time.Now().Add(d).After(deadline) {
			return nil, fmt.Errorf("rpc: TaskManager %s did not register with the JobManager at %s within %v (taskmanager.registration.timeout): %w",
				cfg.Registration.ID, cfg.JobManager, cfg.Backoff.Timeout, err)
		}
		log.Info("rpc: registration failed, retrying", "jobmanager", cfg.JobManager, "attempt", n+1, "in", d.String(), "err", err.Error())
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("rpc: TaskManager %s registering with %s: %w (last attempt: %v)", cfg.Registration.ID, cfg.JobManager, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// attempt registers once and opens the session.
func attempt(ctx context.Context, cfg ClientConfig, log *slog.Logger) (*ClientSession, error) {
	c := &client{cfg: cfg}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	c.transport = &http.Transport{Protocols: protocols, DialContext: c.dial}
	c.api = weirpbconnect.NewJobManagerServiceClient(&http.Client{Transport: c.transport}, "http://"+cfg.JobManager,
		connect.WithReadMaxBytes(cfg.Limits.readMax()), connect.WithSendMaxBytes(cfg.Limits.readMax()),
		connect.WithAcceptCompression("gzip", nil, nil)) // control messages are small: no gzip
	frame, err := protocol.AppendEncode(nil, cfg.Registration.TaskManagerRegistration)
	if err != nil {
		return nil, fmt.Errorf("rpc: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, cfg.Backoff.Attempt)
	rep, err := c.api.Register(actx, connect.NewRequest(&weirpb.RegisterRequest{
		Registration: frame, DataAddress: cfg.Registration.DataAddress, BuildId: cfg.Registration.BuildID,
		Application: cfg.Registration.Application,
	}))
	cancel()
	if err != nil {
		c.closeConn()
		if connect.IsWireError(err) && connect.CodeOf(err) == connect.CodeFailedPrecondition {
			return nil, fmt.Errorf("%w: %s", ErrRefused, err.(*connect.Error).Message())
		}
		return nil, fmt.Errorf("rpc: registering with %s: %w", cfg.JobManager, err)
	}
	fence := Fence{Epoch: rep.Msg.GetEpoch(), Session: rep.Msg.GetSession()}
	if fence.Session == "" || len(fence.Session) > maxSessionID {
		c.closeConn()
		return nil, fmt.Errorf("rpc: the JobManager at %s answered a registration with a session id of %d bytes", cfg.JobManager, len(fence.Session))
	}
	callCtx, stopCall := context.WithCancel(context.Background())
	st := c.api.Session(callCtx)
	st.RequestHeader().Set(SessionHeader, fence.Session)
	if err := st.Send(nil); err != nil {
		stopCall()
		c.closeConn()
		return nil, fmt.Errorf("rpc: opening session %s with %s: %w", fence.Session, cfg.JobManager, err)
	}
	var dropped atomic.Uint64
	cs := &ClientSession{}
	s := newSession(fence, cfg.Registration.ID, "the JobManager", cfg.Limits, log, &dropped)
	cs.s = s
	s.deliver = deliverToTaskManager(cfg.TaskManager)
	s.connErr = func() error { return c.current().err() }
	s.abort = func() {
		stopCall()
		c.closeConn()
	}
	s.halfClose = st.CloseRequest
	s.ended = func(e SessionEnd) {
		s.abort()
		log.Info("rpc: session ended", "jobmanager", cfg.JobManager, "session", e.Session, "by_peer", e.ByPeer, "cause", e.Cause.Error())
		if cfg.Ended != nil {
			cfg.Ended(e)
		}
	}
	s.run(st)
	go func() {
		s.stop()
		// A graceful end waits for the JobManager to end its side; any
		// other is torn down now, which unblocks the reader.
		s.mu.Lock()
		graceful := s.graceful
		s.mu.Unlock()
		if graceful {
			t := time.NewTimer(closeGrace)
			select {
			case <-s.readerDone:
			case <-t.C:
			}
			t.Stop()
		}
		s.abort()
	}()
	log.Info("rpc: registered", "jobmanager", cfg.JobManager, "taskmanager", cfg.Registration.ID, "session", fence.Session, "epoch", fence.Epoch)
	return cs, nil
}

func (c *client) dial(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := c.cfg.Dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn}
	c.mu.Lock()
	c.conn = tc
	c.mu.Unlock()
	return tc, nil
}

func (c *client) current() *trackedConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

func (c *client) closeConn() {
	c.transport.CloseIdleConnections()
	if tc := c.current(); tc != nil {
		tc.Close()
	}
}
