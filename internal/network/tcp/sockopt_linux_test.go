package tcp

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func sockopt(t *testing.T, c net.Conn, level, opt int) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// TestSocketOptions: data connections dialed by NewDialer and accepted by
// Listen carry TCP_NODELAY, keepalive and TCP_USER_TIMEOUT (decision 23),
// the defaults and the settings given.
func TestSocketOptions(t *testing.T) {
	for _, c := range []struct {
		cfg                    Config
		timeoutMs, idle, count int
	}{
		{Config{}, 5000, 1, 5},
		{Config{UserTimeout: 1500 * time.Millisecond, KeepAlive: net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: time.Second, Count: 2}}, 1500, 3, 2},
	} {
		l, err := Listen(context.Background(), "127.0.0.1:0", c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			a, err := l.Accept()
			if err == nil {
				setNoDelay(a)
				accepted <- a
			}
			close(accepted)
		}()
		d, err := NewDialer(c.cfg).DialContext(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		setNoDelay(d)
		a := <-accepted
		if a == nil {
			t.Fatal("accept failed")
		}
		for side, conn := range map[string]net.Conn{"dialed": d, "accepted": a} {
			got := [5]int{sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT), sockopt(t, conn, unix.SOL_SOCKET, unix.SO_KEEPALIVE),
				sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_KEEPCNT),
				sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_NODELAY)}
			if want := [5]int{c.timeoutMs, 1, c.idle, c.count, 1}; got != want {
				t.Errorf("%s connection with %+v: TCP_USER_TIMEOUT, SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPCNT, TCP_NODELAY = %v, want %v", side, c.cfg, got, want)
			}
		}
		d.Close()
		a.Close()
		l.Close()
	}
}
