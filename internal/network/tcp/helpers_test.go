package tcp

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
)

// identity returns the Config of a TaskManager named id in one cluster.
func identity(id string) Config {
	return Config{TaskManager: id, Session: "session-" + id, Epoch: 1, BuildID: "build-1"}
}

// checkGoroutines fails t if goroutines started during the test are still
// running when it ends (after a grace period: exits are asynchronous).
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines left behind (%d before the test):\n%s", n-before, before, buf)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// startServer serves cfg on a loopback port until the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	ln, err := Listen(context.Background(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, cfg, ln)
}

// serveOn serves cfg on ln until the test ends.
func serveOn(t *testing.T, cfg Config, ln net.Listener) *Server {
	t.Helper()
	s, err := NewServer(cfg, ln)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// dial connects a consumer named by cfg to the server s of TaskManager id.
func dial(t *testing.T, cfg Config, s *Server, id string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), cfg, NewDialer(cfg), Peer{ID: id, Addr: s.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pipes is an in-memory network of net.Pipe connections: a Dialer and
// the Listener of its one server, the seam a simulator uses.
type pipes struct {
	accept chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipes() *pipes { return &pipes{accept: make(chan net.Conn), closed: make(chan struct{})} }

func (p *pipes) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case p.accept <- b:
		return a, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipes) Accept() (net.Conn, error) {
	select {
	case c := <-p.accept:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipes) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *pipes) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// failures collects the errors of failed channels.
type failures struct {
	mu   sync.Mutex
	errs map[int]error
	ch   chan struct{}
}

func newFailures() *failures { return &failures{errs: map[int]error{}, ch: make(chan struct{}, 64)} }

func (f *failures) hook(i int) func(error) {
	return func(err error) {
		f.mu.Lock()
		if _, dup := f.errs[i]; dup {
			f.mu.Unlock()
			panic("a channel failed twice")
		}
		f.errs[i] = err
		f.mu.Unlock()
		f.ch <- struct{}{}
	}
}

// wait waits until n channels have failed and returns their errors.
func (f *failures) wait(t *testing.T, n int) map[int]error {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		if len(f.errs) >= n {
			out := make(map[int]error, len(f.errs))
			for k, v := range f.errs {
				out[k] = v
			}
			f.mu.Unlock()
			return out
		}
		f.mu.Unlock()
		select {
		case <-f.ch:
		case <-timeout:
			t.Fatalf("%d of %d channels failed within 10s", len(f.errs), n)
		}
	}
}

// mustContain fails t unless err's text has every part.
func mustContain(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one naming %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name %q", what, err, p)
		}
	}
}

// pollOne waits for the next buffer of g.
func pollOne(t testing.TB, g *network.InputGate, timeout time.Duration) (*network.InputChannel, *network.Buffer) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if c, b, ok := g.Poll(); ok {
			return c, b
		}
		select {
		case <-g.Notify():
		case <-deadline.C:
			t.Fatalf("no buffer within %v", timeout)
		}
	}
}
