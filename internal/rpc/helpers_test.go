package rpc

import (
	"context"
	"math/rand/v2"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/testseed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder keeps what a fake gateway received, in order, and lets a test
// wait for a count.
type recorder struct {
	mu   sync.Mutex
	got  []any
	more chan struct{} // closed and replaced on every arrival
	// block, if set, is waited on before each arrival is recorded.
	block chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{})} }

func (r *recorder) add(v any) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	r.got = append(r.got, v)
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
}

// wait returns the first n arrivals, failing after d.
func (r *recorder) wait(t *testing.T, n int, d time.Duration) []any {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			got := append([]any(nil), r.got[:n]...)
			r.mu.Unlock()
			return got
		}
		more, have := r.more, len(r.got)
		r.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("%d messages arrived within %v, want %d", have, d, n)
		}
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// fakeTM and fakeJM record every call, as protocol's loopback tests do.
type fakeTM struct{ *recorder }

func (f fakeTM) SubmitTask(d protocol.Deployment)               { f.add(d) }
func (f fakeTM) CancelTask(e protocol.ExecutionID)              { f.add(e) }
func (f fakeTM) TriggerCheckpoint(t protocol.TriggerCheckpoint) { f.add(t) }
func (f fakeTM) NotifyCheckpoint(n protocol.NotifyCheckpoint)   { f.add(n) }
func (f fakeTM) SendEvent(e protocol.OperatorEvent)             { f.add(e) }
func (f fakeTM) ReleaseJob(r protocol.ReleaseJob)               { f.add(r) }
func (f fakeTM) DeployAttempt(a protocol.DeployAttempt)         { f.add(a) }
func (f fakeTM) RegisterJob(j protocol.RegisterJob)             { f.add(j) }
func (f fakeTM) HeartbeatReply(r protocol.HeartbeatReply)       { f.add(r) }

type fakeJM struct{ *recorder }

func (f fakeJM) UpdateTaskState(u protocol.TaskStateUpdate)             { f.add(u) }
func (f fakeJM) AcknowledgeCheckpoint(a protocol.AcknowledgeCheckpoint) { f.add(a) }
func (f fakeJM) DeclineCheckpoint(d protocol.DeclineCheckpoint)         { f.add(d) }
func (f fakeJM) SendEvent(e protocol.OperatorEvent)                     { f.add(e) }
func (f fakeJM) SourceEnded(s protocol.SourceEnded)                     { f.add(s) }
func (f fakeJM) ReportTaskStats(r protocol.TaskStatsReport)             { f.add(r) }
func (f fakeJM) Heartbeat(h protocol.Heartbeat)                         { f.add(h) }
func (f fakeJM) Deregister(d protocol.Deregister)                       { f.add(d) }

// pair is a Server on 127.0.0.1:0 and one TaskManager connected to it.
type pair struct {
	srv         *Server
	addr        string
	jm          fakeJM
	tm          fakeTM
	ss          *ServerSession
	cs          *ClientSession
	srvEnded    chan SessionEnd
	cliEnded    chan SessionEnd
	conns       chan net.Conn // what the client dialed
	connectedCh chan *ServerSession
}

type pairOpts struct {
	server, client Limits
	jmBlock        chan struct{}
	reg            Registration
	admit          func(Registration) error
}

func startServer(t *testing.T, p *pair, o pairOpts, address string) {
	t.Helper()
	p.jm = fakeJM{newRecorder()}
	p.jm.block = o.jmBlock
	p.srvEnded = make(chan SessionEnd, 4)
	connected := make(chan *ServerSession, 4)
	srv, err := NewServer(ServerConfig{
		Epoch: 1, JobManager: p.jm, Limits: o.server, Admit: o.admit,
		Connected: func(_ Registration, ss *ServerSession) { connected <- ss },
		Ended:     func(e SessionEnd) { p.srvEnded <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := srv.Start(address)
	if err != nil {
		t.Fatal(err)
	}
	p.srv, p.addr = srv, a.String()
	t.Cleanup(func() { srv.Close() })
	p.connectedCh = connected
}

func newPair(t *testing.T, o pairOpts) *pair {
	t.Helper()
	p := &pair{}
	startServer(t, p, o, "127.0.0.1:0")
	p.connect(t, o)
	return p
}

// connect registers a TaskManager (o.reg, or tm-1) and waits until the
// server handed its session to Connected.
func (p *pair) connect(t *testing.T, o pairOpts) {
	t.Helper()
	p.tm = fakeTM{newRecorder()}
	ended := make(chan SessionEnd, 4)
	p.cliEnded = ended
	p.conns = make(chan net.Conn, 16)
	reg := o.reg
	if reg.ID == "" {
		reg = Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-1", Slots: 2, NetworkMemory: 64 << 20},
			DataAddress: "127.0.0.1:7000", BuildID: "build-1"}
	}
	dial := Dialer(TCP{})
	cs, err := Connect(context.Background(), ClientConfig{
		JobManager: p.addr, Registration: reg, TaskManager: p.tm, Limits: o.client,
		Ended: func(e SessionEnd) { ended <- e },
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			c, err := dial(ctx, network, address)
			if err == nil {
				p.conns <- c
			}
			return c, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	p.cs = cs
	select {
	case p.ss = <-p.connectedCh:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not report the session within 5s")
	}
}

func waitEnd(t *testing.T, ch chan SessionEnd, side string) SessionEnd {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("the %s did not report the session's end within 10s", side)
	}
	return SessionEnd{}
}

func random[M protocol.Message](r *rand.Rand) M {
	var m M
	testseed.Fill(r, reflect.ValueOf(&m).Elem())
	return m
}
