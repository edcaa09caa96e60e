package tcp

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestClientOneConnectionPerPeer: concurrent callers share one connection
// to a producer TaskManager; one that ended is replaced by a new dial;
// after Close nothing dials.
func TestClientOneConnectionPerPeer(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, identity("producer"))
	cc := identity("consumer")
	cl := NewClient(cc, NewDialer(cc))
	defer cl.Close()
	peer := Peer{ID: "producer", Addr: s.Addr().String()}
	conns := make([]*Conn, 4)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := cl.Conn(context.Background(), peer)
			if err != nil {
				t.Error(err)
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	for _, c := range conns[1:] {
		if c != conns[0] {
			t.Fatal("concurrent callers got different connections to one TaskManager")
		}
	}
	waitFor(t, "the server to hold the connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) == 1
	})
	conns[0].Close()
	again, err := cl.Conn(context.Background(), peer)
	if err != nil {
		t.Fatal(err)
	}
	if again == conns[0] || again.Err() != nil {
		t.Fatal("the ended connection was handed out again")
	}
	cl.Close()
	if _, err := cl.Conn(context.Background(), peer); !errors.Is(err, ErrClosed) {
		t.Errorf("Conn after Close: %v, want ErrClosed", err)
	}
	if again.Err() == nil {
		t.Error("Close left a connection open")
	}
}
