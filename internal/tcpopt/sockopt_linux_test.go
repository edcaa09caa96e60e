package tcpopt

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestReadBack: the options UserTimeoutControl sets on a dialed socket
// and SetUserTimeout on an accepted one, with Go's keepalive settings,
// are what Probe (through Read) reports for each end; a timeout of 0
// leaves the kernel's default (0).
func TestReadBack(t *testing.T) {
	ka := net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: time.Second, Count: 2}
	for _, timeout := range []time.Duration{1500 * time.Millisecond, 0} {
		l, err := (&net.ListenConfig{KeepAliveConfig: ka}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dial := (&net.Dialer{KeepAliveConfig: ka, Control: UserTimeoutControl(timeout)}).DialContext
		d, a, err := Probe(context.Background(), timeoutListener{l, timeout}, dial)
		want := Options{UserTimeout: timeout, KeepAlive: true, KeepIdle: 3 * time.Second, KeepInterval: time.Second, KeepCount: 2, NoDelay: true}
		if err != nil || d != want || a != want {
			t.Errorf("timeout %v: dialed %+v, accepted %+v, %v; want %+v", timeout, d, a, err, want)
		}
		l.Close()
	}
}

// timeoutListener sets TCP_USER_TIMEOUT on each connection it accepts.
type timeoutListener struct {
	net.Listener
	timeout time.Duration
}

func (l timeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = SetUserTimeout(c.(*net.TCPConn), l.timeout)
	}
	return c, err
}

// TestProbeNotTCP: Probe of a listener that is not TCP says so.
func TestProbeNotTCP(t *testing.T) {
	l, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", addr)
	}
	if _, _, err := Probe(context.Background(), l, dial); err == nil {
		t.Fatal("Probe of a unix socket: no error")
	}
}
