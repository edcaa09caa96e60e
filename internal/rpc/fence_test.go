package rpc

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc/weirpb"
	"github.com/weirhq/weir/internal/rpc/weirpb/weirpbconnect"
)

func h2cClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

func frame(t *testing.T, m protocol.Message) []byte {
	t.Helper()
	b, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerDropsStaleMessages: the JobManager drops, and counts, a
// TaskManager's message of another epoch or session, and delivers the next
// one of its own.
func TestServerDropsStaleMessages(t *testing.T) {
	p := &pair{}
	startServer(t, p, pairOpts{}, "127.0.0.1:0")
	hc := h2cClient()
	defer hc.Transport.(*http.Transport).CloseIdleConnections()
	api := weirpbconnect.NewJobManagerServiceClient(hc, "http://"+p.addr)
	rep, err := api.Register(context.Background(), connect.NewRequest(&weirpb.RegisterRequest{
		Registration: frame(t, protocol.TaskManagerRegistration{ID: "tm-raw", Slots: 1})}))
	if err != nil {
		t.Fatal(err)
	}
	epoch, session := rep.Msg.GetEpoch(), rep.Msg.GetSession()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := api.Session(ctx)
	st.RequestHeader().Set(SessionHeader, session)
	msg := func(exec int) []byte {
		return frame(t, protocol.SourceEnded{Exec: protocol.ExecutionID{Job: "j", Subtask: exec}})
	}
	for _, env := range []*weirpb.Envelope{
		{Epoch: epoch + 1, Session: session, Seq: 1, Frame: msg(1)}, // a newer leader's
		{Epoch: epoch, Session: "another", Seq: 1, Frame: msg(2)},   // another session's
		{Epoch: epoch, Session: session, Seq: 1, Frame: msg(3)},
	} {
		if err := st.Send(env); err != nil {
			t.Fatal(err)
		}
	}
	got := p.jm.wait(t, 1, 5*time.Second)
	if got[0].(protocol.SourceEnded).Exec.Subtask != 3 {
		t.Fatalf("delivered %v, want only the message of this session", got)
	}
	if n := p.srv.Dropped(); n != 2 {
		t.Fatalf("Dropped() = %d, want 2", n)
	}
	// A seq gap is a protocol error: the session ends by this side.
	if err := st.Send(&weirpb.Envelope{Epoch: epoch, Session: session, Seq: 5, Frame: msg(4)}); err != nil {
		t.Fatal(err)
	}
	if e := waitEnd(t, p.srvEnded, "JobManager"); e.ByPeer || p.jm.count() != 1 {
		t.Fatalf("a seq gap ended the session with %v after %d deliveries", e, p.jm.count())
	}
	st.CloseRequest()
	st.CloseResponse()
}

// fakeJobManager is a JobManagerService that registers anyone at epoch 7
// as session s1 and sends it the envelopes given.
type fakeJobManager struct {
	weirpbconnect.UnimplementedJobManagerServiceHandler
	send []*weirpb.Envelope
	done chan struct{}
}

func (f *fakeJobManager) Register(context.Context, *connect.Request[weirpb.RegisterRequest]) (*connect.Response[weirpb.RegisterReply], error) {
	return connect.NewResponse(&weirpb.RegisterReply{Epoch: 7, Session: "s1"}), nil
}

func (f *fakeJobManager) Session(ctx context.Context, st *connect.BidiStream[weirpb.Envelope, weirpb.Envelope]) error {
	for _, e := range f.send {
		if err := st.Send(e); err != nil {
			return err
		}
	}
	select {
	case <-f.done:
	case <-ctx.Done():
	}
	return errors.New("done")
}

// TestClientDropsStaleMessages: the TaskManager drops, and counts, the
// JobManager's message of another epoch or session.
func TestClientDropsStaleMessages(t *testing.T) {
	msg := func(attempt int) []byte {
		return frame(t, protocol.CancelTask{Exec: protocol.ExecutionID{Job: "j", Attempt: attempt}})
	}
	f := &fakeJobManager{done: make(chan struct{}), send: []*weirpb.Envelope{
		{Epoch: 6, Session: "s1", Seq: 1, Frame: msg(1)},
		{Epoch: 7, Session: "s0", Seq: 1, Frame: msg(2)},
		{Epoch: 7, Session: "s1", Seq: 1, Frame: msg(3)},
	}}
	path, h := weirpbconnect.NewJobManagerServiceHandler(f)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	l, err := Listen(context.Background(), "127.0.0.1:0", TCP{})
	if err != nil {
		t.Fatal(err)
	}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: protocols}
	go srv.Serve(l)
	defer srv.Close()
	tm := fakeTM{newRecorder()}
	cs, err := Connect(context.Background(), ClientConfig{JobManager: l.Addr().String(), TaskManager: tm,
		Registration: Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer close(f.done) // first: the fake ends its side, so Close need not wait
	if got := tm.wait(t, 1, 5*time.Second); got[0].(protocol.ExecutionID).Attempt != 3 {
		t.Fatalf("delivered %v, want only the message of this session", got)
	}
	if cs.Dropped() != 2 || cs.Fence() != (Fence{Epoch: 7, Session: "s1"}) {
		t.Fatalf("Dropped() = %d, Fence() = %v; want 2 and epoch 7 session s1", cs.Dropped(), cs.Fence())
	}
}
