package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/testseed"
)

// TestEveryCallArrivesEqual: every gateway call of both directions, and the
// registration, reach the other process's gateway decoded equal to what was
// sent, in the order sent, over a real socket (protocol's loopback tests'
// table, through this transport).
func TestEveryCallArrivesEqual(t *testing.T) {
	r := testseed.Rand(t, 36)
	reg := Registration{TaskManagerRegistration: random[protocol.TaskManagerRegistration](r), DataAddress: "10.36.0.3:41000", BuildID: "rev-abc+sha256:0123"}
	reg.ID = "tm-" + reg.ID // a registration needs an id
	regs := make(chan Registration, 1)
	p := &pair{}
	startServer(t, p, pairOpts{admit: func(got Registration) error { regs <- got; return nil }}, "127.0.0.1:0")
	p.connect(t, pairOpts{reg: reg})
	if got := <-regs; !reflect.DeepEqual(got, reg) {
		t.Fatalf("registered %#v, the JobManager got %#v", reg, got)
	}
	if got := p.ss.Registration(); !reflect.DeepEqual(got, reg) {
		t.Fatalf("registered %#v, the session says %#v", reg, got)
	}
	var sentTM, sentJM []any
	for range 50 {
		d := random[protocol.Deployment](r)
		p.ss.SubmitTask(d)
		e := random[protocol.CancelTask](r).Exec
		p.ss.CancelTask(e)
		tc := random[protocol.TriggerCheckpoint](r)
		p.ss.TriggerCheckpoint(tc)
		nc := random[protocol.NotifyCheckpoint](r)
		p.ss.NotifyCheckpoint(nc)
		ev := random[protocol.OperatorEvent](r)
		p.ss.SendEvent(ev)
		rj := random[protocol.ReleaseJob](r)
		p.ss.ReleaseJob(rj)
		rg := random[protocol.RegisterJob](r)
		p.ss.RegisterJob(rg)
		hr := random[protocol.HeartbeatReply](r)
		p.ss.HeartbeatReply(hr)
		da := random[protocol.DeployAttempt](r)
		p.ss.DeployAttempt(da)
		sentTM = append(sentTM, d, e, tc, nc, ev, rj, rg, hr, da)
		if p.ss.Sent() != uint64(len(sentTM)) {
			t.Fatalf("Sent is %d after %d messages", p.ss.Sent(), len(sentTM))
		}

		u, a, dc := random[protocol.TaskStateUpdate](r), random[protocol.AcknowledgeCheckpoint](r), random[protocol.DeclineCheckpoint](r)
		oe, se, st := random[protocol.OperatorEvent](r), random[protocol.SourceEnded](r), random[protocol.TaskStatsReport](r)
		p.cs.UpdateTaskState(u)
		p.cs.AcknowledgeCheckpoint(a)
		p.cs.DeclineCheckpoint(dc)
		p.cs.SendEvent(oe)
		p.cs.SourceEnded(se)
		p.cs.ReportTaskStats(st)
		hb, dr := random[protocol.Heartbeat](r), random[protocol.Deregister](r)
		p.cs.Heartbeat(hb)
		p.cs.Deregister(dr)
		sentJM = append(sentJM, u, a, dc, oe, se, st, hb, dr)
	}
	for side, c := range map[string]struct {
		sent []any
		rec  *recorder
	}{"TaskManager": {sentTM, p.tm.recorder}, "JobManager": {sentJM, p.jm.recorder}} {
		got := c.rec.wait(t, len(c.sent), 10*time.Second)
		for i, sent := range c.sent {
			if !reflect.DeepEqual(got[i], sent) {
				t.Fatalf("message %d to the %s: sent %T %#v, got %T %#v", i, side, sent, sent, got[i], got[i])
			}
		}
	}
	if p.ss.Received() != uint64(len(sentJM)) || p.cs.Received() != uint64(len(sentTM)) {
		t.Fatalf("Received: server %d, client %d; want %d and %d", p.ss.Received(), p.cs.Received(), len(sentJM), len(sentTM))
	}
	if p.srv.Dropped() != 0 || p.cs.Dropped() != 0 {
		t.Fatalf("dropped %d and %d messages of a live session", p.srv.Dropped(), p.cs.Dropped())
	}
}

// TestOrderUnderConcurrency: several goroutines call each side's gateway
// at once; each goroutine's messages arrive complete and in its order.
func TestOrderUnderConcurrency(t *testing.T) {
	p := newPair(t, pairOpts{})
	const senders, each = 8, 400
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				p.cs.UpdateTaskState(protocol.TaskStateUpdate{Exec: protocol.ExecutionID{Job: "j", Subtask: g, Attempt: i}, State: protocol.TaskRunning})
			}
		}()
		go func() {
			defer wg.Done()
			for i := range each {
				p.ss.CancelTask(protocol.ExecutionID{Job: "j", Subtask: g, Attempt: i})
			}
		}()
	}
	wg.Wait()
	check := func(side string, got []any, exec func(any) protocol.ExecutionID) {
		next := make([]int, senders)
		for _, m := range got {
			e := exec(m)
			if e.Attempt != next[e.Subtask] {
				t.Fatalf("%s: sender %d's message %d arrived where %d was due", side, e.Subtask, e.Attempt, next[e.Subtask])
			}
			next[e.Subtask]++
		}
	}
	check("to the JobManager", p.jm.wait(t, senders*each, 10*time.Second), func(m any) protocol.ExecutionID { return m.(protocol.TaskStateUpdate).Exec })
	check("to the TaskManager", p.tm.wait(t, senders*each, 10*time.Second), func(m any) protocol.ExecutionID { return m.(protocol.ExecutionID) })
}

// TestServerCloseEndsClientSession: what the JobManager queued before its
// Close arrives, then the TaskManager's session ends, by the peer, with the
// JobManager's reason.
func TestServerCloseEndsClientSession(t *testing.T) {
	p := newPair(t, pairOpts{})
	for i := range 100 {
		p.ss.CancelTask(protocol.ExecutionID{Job: "j", Attempt: i})
	}
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	p.tm.wait(t, 100, time.Second)
	e := waitEnd(t, p.cliEnded, "TaskManager")
	if !e.ByPeer || !strings.Contains(e.Cause.Error(), "the JobManager is shutting down") {
		t.Fatalf("the TaskManager's session ended with %v; want by the peer, saying the JobManager is shutting down", e)
	}
	if s := waitEnd(t, p.srvEnded, "JobManager"); s.ByPeer {
		t.Fatalf("the JobManager's own Close was reported as the peer's: %v", s)
	}
	if err := p.cs.Send(protocol.SourceEnded{}); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("Send on an ended session: %v, want ErrSessionEnded", err)
	}
	t.Logf("TaskManager: %v", e)
}

// TestClientCloseEndsServerSession: a TaskManager that closes its session
// has what it queued delivered, and the JobManager sees the peer end it.
func TestClientCloseEndsServerSession(t *testing.T) {
	p := newPair(t, pairOpts{})
	for i := range 100 {
		p.cs.SourceEnded(protocol.SourceEnded{Exec: protocol.ExecutionID{Attempt: i}})
	}
	p.cs.Close()
	p.jm.wait(t, 100, time.Second)
	e := waitEnd(t, p.srvEnded, "JobManager")
	if !e.ByPeer || e.TaskManager != "tm-1" {
		t.Fatalf("the JobManager saw %v; want tm-1's session ended by the peer", e)
	}
	if c := waitEnd(t, p.cliEnded, "TaskManager"); c.ByPeer || !strings.Contains(c.Cause.Error(), "closed") {
		t.Fatalf("the TaskManager's own Close was reported as %v", c)
	}
}

// TestClientDeathDetected: a TaskManager whose connection goes away as a
// dying process's does (the kernel's FIN, or a reset) is reported ended,
// by the peer, within milliseconds; the time is logged.
func TestClientDeathDetected(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			p := newPair(t, pairOpts{})
			conn := <-p.conns
			if reset {
				conn.(*net.TCPConn).SetLinger(0)
			}
			start := time.Now()
			conn.Close()
			e := waitEnd(t, p.srvEnded, "JobManager")
			took := time.Since(start)
			t.Logf("the JobManager reported the end %v after the connection closed: %v", took, e)
			if !e.ByPeer {
				t.Fatalf("a closed connection reported as this side's end: %v", e)
			}
			if took > time.Second {
				t.Fatalf("the end took %v to report, want well under a second on loopback", took)
			}
			waitEnd(t, p.cliEnded, "TaskManager")
		})
	}
}

// TestOversizeMessageRefused: a message above rpc.max-message-size is
// refused by its sender (Send's error; a gateway call ends the session with
// it) and, when the receiver's limit is lower than the sender's, by the
// receiver, which ends the session; every error names the setting.
func TestOversizeMessageRefused(t *testing.T) {
	big := protocol.OperatorEvent{Exec: protocol.ExecutionID{Job: "j"}, Payload: make([]byte, 2000)}
	t.Run("sender", func(t *testing.T) {
		p := newPair(t, pairOpts{client: Limits{MaxMessageSize: 1024}})
		err := p.cs.Send(big)
		if err == nil || !strings.Contains(err.Error(), SettingMaxMessageSize) || !strings.Contains(err.Error(), "OperatorEvent") {
			t.Fatalf("Send of a 2000-byte event with a 1024-byte limit: %v", err)
		}
		p.cs.SourceEnded(protocol.SourceEnded{}) // the session lives on
		p.jm.wait(t, 1, 5*time.Second)
		p.cs.SendEvent(big)
		e := waitEnd(t, p.cliEnded, "TaskManager")
		if e.ByPeer || !strings.Contains(e.Cause.Error(), SettingMaxMessageSize) {
			t.Fatalf("a gateway call of an oversize message ended the session with %v", e)
		}
		waitEnd(t, p.srvEnded, "JobManager")
	})
	t.Run("receiver", func(t *testing.T) {
		p := newPair(t, pairOpts{server: Limits{MaxMessageSize: 1024}})
		p.cs.SendEvent(big)
		e := waitEnd(t, p.srvEnded, "JobManager")
		if e.ByPeer || !strings.Contains(e.Cause.Error(), SettingMaxMessageSize) {
			t.Fatalf("the JobManager received an oversize message and ended with %v", e)
		}
		c := waitEnd(t, p.cliEnded, "TaskManager")
		if !c.ByPeer || !strings.Contains(c.Cause.Error(), SettingMaxMessageSize) {
			t.Fatalf("the TaskManager saw %v; want the JobManager's end naming %s", c, SettingMaxMessageSize)
		}
		if p.jm.count() != 0 {
			t.Fatalf("the oversize message was delivered")
		}
	})
}

// TestSendQueueBound: the message that exceeds rpc.send-queue.messages or
// rpc.send-queue.bytes is refused and ends the session, naming the setting,
// without blocking the caller. The JobManager here reads nothing (its
// gateway blocks, so HTTP/2 flow control stops the writer); a burst beyond
// a bound overflows a reading peer too, hence the generous defaults.
func TestSendQueueBound(t *testing.T) {
	ev := protocol.OperatorEvent{Exec: protocol.ExecutionID{Job: "j"}, Payload: make([]byte, 4096)}
	for _, c := range []struct {
		setting string
		limits  Limits
	}{
		{SettingSendQueueMessages, Limits{SendQueueMessages: 64}},
		{SettingSendQueueBytes, Limits{SendQueueBytes: 1 << 20}},
	} {
		t.Run(c.setting, func(t *testing.T) {
			block := make(chan struct{})
			p := newPair(t, pairOpts{client: c.limits, jmBlock: block})
			defer close(block)
			var err error
			n := 0
			for ; n < 100000 && err == nil; n++ {
				err = p.cs.Send(ev)
			}
			if err == nil || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("400 MB sent to a JobManager that reads nothing, and the last Send said %v", err)
			}
			t.Logf("message %d: %v", n, err)
			if e := waitEnd(t, p.cliEnded, "TaskManager"); e.ByPeer || !strings.Contains(e.Cause.Error(), c.setting) {
				t.Fatalf("the session ended with %v", e)
			}
		})
	}
}

// TestRefusedRegistration: a registration Admit refuses fails Connect at
// once with ErrRefused and the reason, without retrying.
func TestRefusedRegistration(t *testing.T) {
	p := &pair{}
	var attempts atomic.Int32
	startServer(t, p, pairOpts{admit: func(r Registration) error {
		attempts.Add(1)
		return fmt.Errorf("build %s, the JobManager runs build build-2", r.BuildID)
	}}, "127.0.0.1:0")
	_, err := Connect(context.Background(), ClientConfig{JobManager: p.addr, TaskManager: fakeTM{newRecorder()},
		Registration: Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-9"}, BuildID: "build-1"},
		Backoff:      Backoff{Initial: time.Millisecond}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "build build-1, the JobManager runs build build-2") || attempts.Load() != 1 {
		t.Fatalf("Connect after %d attempts: %v; want one, refused with the reason", attempts.Load(), err)
	}
}

// TestRegistrationRetries: a TaskManager started before its JobManager
// retries with backoff and registers once the JobManager listens.
func TestRegistrationRetries(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &pair{addr: addr}
	done := make(chan error, 1)
	go func() {
		cs, err := Connect(context.Background(), ClientConfig{JobManager: addr, TaskManager: fakeTM{newRecorder()},
			Registration: Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-late"}},
			Backoff:      Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
		if err == nil {
			defer cs.Close()
			cs.SourceEnded(protocol.SourceEnded{})
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	startServer(t, p, pairOpts{}, addr)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.jm.wait(t, 1, 5*time.Second)

	// With nothing listening, Connect gives up after the registration
	// timeout, naming it.
	_, err = Connect(context.Background(), ClientConfig{JobManager: "127.0.0.1:1", TaskManager: fakeTM{newRecorder()},
		Registration: Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-x"}},
		Backoff:      Backoff{Initial: 10 * time.Millisecond, Timeout: 200 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "taskmanager.registration.timeout") {
		t.Fatalf("Connect to nothing: %v", err)
	}
}

// TestRegisterAgainReplacesSession: a TaskManager registering again under
// its id ends its older session, reported as the peer's end.
func TestRegisterAgainReplacesSession(t *testing.T) {
	p := newPair(t, pairOpts{})
	first, firstEnded := p.ss, p.cliEnded
	p.connect(t, pairOpts{})
	e := waitEnd(t, p.srvEnded, "JobManager")
	if e.Session != first.ID() || !e.ByPeer || !strings.Contains(e.Cause.Error(), "registered again") {
		t.Fatalf("the older session %s ended with %v", first.ID(), e)
	}
	waitEnd(t, firstEnded, "first TaskManager session")
	p.cs.SourceEnded(protocol.SourceEnded{})
	p.jm.wait(t, 1, 5*time.Second)
}

// recordingListener hands every connection it accepts to conns.
type recordingListener struct {
	net.Listener
	conns chan net.Conn
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.conns <- c
	}
	return c, err
}

// TestJobManagerDeathDetected: a TaskManager whose JobManager's connection
// goes away as a dying process's does sees its session end, by the peer,
// within milliseconds; the time is logged.
func TestJobManagerDeathDetected(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			p := &pair{jm: fakeJM{newRecorder()}, srvEnded: make(chan SessionEnd, 4), connectedCh: make(chan *ServerSession, 4)}
			srv, err := NewServer(ServerConfig{Epoch: 1, JobManager: p.jm,
				Connected: func(_ Registration, ss *ServerSession) { p.connectedCh <- ss },
				Ended:     func(e SessionEnd) { p.srvEnded <- e }})
			if err != nil {
				t.Fatal(err)
			}
			l, err := Listen(context.Background(), "127.0.0.1:0", TCP{})
			if err != nil {
				t.Fatal(err)
			}
			accepted := make(chan net.Conn, 4)
			if err := srv.Serve(recordingListener{l, accepted}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			p.srv, p.addr = srv, l.Addr().String()
			p.connect(t, pairOpts{})
			conn := <-accepted
			if reset {
				conn.(*net.TCPConn).SetLinger(0)
			}
			start := time.Now()
			conn.Close()
			e := waitEnd(t, p.cliEnded, "TaskManager")
			took := time.Since(start)
			t.Logf("the TaskManager reported the end %v after the connection closed: %v", took, e)
			if !e.ByPeer || took > time.Second {
				t.Fatalf("the TaskManager saw %v after %v; want the peer's end, well under a second", e, took)
			}
			waitEnd(t, p.srvEnded, "JobManager")
		})
	}
}
