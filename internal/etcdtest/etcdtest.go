package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startTimeout bounds how long a start waits for the server to be ready.
const startTimeout = 30 * time.Second

// Server is one embedded etcd member.
type Server struct {
	t                  testing.TB
	dir, logFile       string
	clientURL, peerURL url.URL

	mu sync.Mutex  // guards e
	e  *embed.Etcd // nil while stopped
}

// Start starts an etcd server for t, on free loopback ports; it is stopped
// when t ends. A server that does not start fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	base := t.TempDir()
	s := &Server{t: t, dir: filepath.Join(base, "data"), logFile: filepath.Join(base, "etcd.log")}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(s.logFile); err == nil && len(b) > 0 {
				t.Logf("etcd's log (errors):\n%s", tail(string(b), 40))
			}
		}
	})
	var err error
	// A free port found here may be taken by another process before etcd
	// listens on it: try again with others.
	for range 3 {
		s.clientURL, s.peerURL = loopbackURL(t), loopbackURL(t)
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("etcdtest: %v", err)
	return nil
}

// Endpoints are the server's client endpoints (host:port), as
// high-availability.etcd.endpoints takes them.
func (s *Server) Endpoints() []string { return []string{s.clientURL.Host} }

// Stop stops the server at once, as a crash would (nothing if stopped):
// clients get no answer until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e != nil {
		// Stopped first, the server ends its open streams (a lease's
		// keepalives, watches), which Close would otherwise wait for and
		// keep serving for its request timeout (5 s).
		s.e.Server.HardStop()
		s.e.Close()
		s.e = nil
	}
}

// Restart stops the server if it runs and starts it again on the same
// data and ports; a server that does not start fails the test.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("etcdtest: restart: %v", err)
	}
}

func (s *Server) start() error {
	cfg := embed.NewConfig()
	cfg.Name = "weir-test"
	cfg.Dir = s.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{s.clientURL}, []url.URL{s.clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{s.peerURL}, []url.URL{s.peerURL}
	cfg.InitialCluster = cfg.Name + "=" + s.peerURL.String()
	cfg.LogLevel, cfg.LogOutputs = "error", []string{s.logFile}
	// A test's data need not survive a crash of the machine.
	cfg.UnsafeNoFsync = true
	// A single member elects itself after one election timeout: keep it
	// short, so a start or restart takes a fraction of a second.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd on %s (data %s): %w", s.clientURL.Host, s.dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd on %s: %w", s.clientURL.Host, err)
	case <-time.After(startTimeout):
		e.Close()
		return fmt.Errorf("etcd on %s not ready within %v", s.clientURL.Host, startTimeout)
	}
	s.mu.Lock()
	s.e = e
	s.mu.Unlock()
	return nil
}

// loopbackURL returns an http URL on a free port of 127.0.0.1.
func loopbackURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: find a free port: %v", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
