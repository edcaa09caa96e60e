package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits on every connection, so a slow or stuck client cannot hold the
// server: it is dropped when a limit is hit.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
)

// DefaultAddr is where Flink's REST API listens, and so where Weir's does.
const DefaultAddr = "127.0.0.1:8081"

// ErrServerClosed is returned by Start after Shutdown, or on a second Start.
var ErrServerClosed = errors.New("rest: server already started or shut down")

// Server serves the REST API with a lifecycle: Start, then Shutdown. A Server
// is started at most once.
type Server struct {
	handler http.Handler

	mu       sync.Mutex // guards state, srv, addr and done
	state    serverState
	srv      *http.Server
	addr     string
	done     chan struct{} // closed when the Serve goroutine has returned
	serveErr error         // Serve's result; read only after done is closed
}

type serverState int

const (
	serverNew serverState = iota
	serverRunning
	serverClosed
)

// NewServer returns a server for c; opts are passed to NewHandler.
func NewServer(c Cluster, opts ...Option) *Server {
	return &Server{handler: NewHandler(c, opts...)}
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in a
// goroutine that Shutdown waits for. It returns the bound address.
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != serverNew {
		return "", ErrServerClosed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("rest: listen on %s: %w", addr, err)
	}
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	s.addr = ln.Addr().String()
	s.done = make(chan struct{})
	s.state = serverRunning
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	return s.addr, nil
}

// Addr is the bound address, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Shutdown stops accepting connections, waits for in-flight requests and for
// the serving goroutine, or until ctx is done; then it closes what is left.
// It returns ctx's error if it had to cut requests short, or the error that
// stopped serving early. Shutdown before Start, or twice, returns nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	prev := s.state
	s.state = serverClosed
	s.mu.Unlock()
	if prev != serverRunning {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close() // ctx expired: drop the remaining connections
	}
	<-s.done // Serve returns promptly once the listener is closed
	return errors.Join(err, s.serveErr)
}
