package rest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirhq/weir/internal/rest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServerLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)

	s := rest.NewServer(&fakeCluster{}, rest.WithVersion("0.1.0", "abc1234"))
	if s.Addr() != "" {
		t.Errorf("Addr before Start = %q", s.Addr())
	}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if addr != s.Addr() || strings.HasSuffix(addr, ":0") {
		t.Errorf("Start = %q, Addr = %q", addr, s.Addr())
	}
	if _, err := s.Start("127.0.0.1:0"); !errors.Is(err, rest.ErrServerClosed) {
		t.Errorf("second Start = %v, want ErrServerClosed", err)
	}

	tr := &http.Transport{}
	c := rest.NewClient("http://"+addr, &http.Client{Transport: tr, Timeout: 5 * time.Second})
	ov, err := c.Overview(context.Background())
	if err != nil || ov.FlinkVersion != "0.1.0" {
		t.Fatalf("Overview = %+v, %v", ov, err)
	}
	if _, err := c.Jobs(context.Background()); err != nil { // reuses the kept-alive connection
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	tr.CloseIdleConnections()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown = %v", err)
	}
	if _, err := c.Overview(context.Background()); !errors.Is(err, rest.ErrNoCluster) {
		t.Errorf("Overview after Shutdown = %v, want ErrNoCluster", err)
	}
	if _, err := s.Start("127.0.0.1:0"); !errors.Is(err, rest.ErrServerClosed) {
		t.Errorf("Start after Shutdown = %v, want ErrServerClosed", err)
	}
	tr.CloseIdleConnections()
}

func TestServerShutdownBeforeStart(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := rest.NewServer(&fakeCluster{})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown before Start = %v", err)
	}
	if _, err := s.Start("127.0.0.1:0"); !errors.Is(err, rest.ErrServerClosed) {
		t.Errorf("Start after Shutdown = %v, want ErrServerClosed", err)
	}
}

func TestServerStartBadAddr(t *testing.T) {
	s := rest.NewServer(&fakeCluster{})
	if _, err := s.Start("127.0.0.1:-1"); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("Start(bad addr) = %v", err)
	}
	_ = s.Shutdown(context.Background())
}
