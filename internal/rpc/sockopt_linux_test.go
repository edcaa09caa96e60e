package rpc

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

// TestSocketOptions: connections dialed by Dialer and accepted by Listen
// carry keepalive and TCP_USER_TIMEOUT (decision 23), the defaults and
// settings given.
func TestSocketOptions(t *testing.T) {
	for _, c := range []struct {
		tcp                    TCP
		timeoutMs, idle, count int
	}{
		{TCP{}, 5000, 1, 5},
		{TCP{UserTimeout: 1500 * time.Millisecond, KeepAlive: net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: time.Second, Count: 2}}, 1500, 3, 2},
	} {
		l, err := Listen(context.Background(), "127.0.0.1:0", c.tcp)
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			a, err := l.Accept()
			if err == nil {
				accepted <- a
			}
			close(accepted)
		}()
		d, err := Dialer(c.tcp)(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a := <-accepted
		if a == nil {
			t.Fatal("accept failed")
		}
		for side, conn := range map[string]net.Conn{"dialed": d, "accepted": a} {
			got := [4]int{sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT), sockopt(t, conn, unix.SOL_SOCKET, unix.SO_KEEPALIVE),
				sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), sockopt(t, conn, unix.IPPROTO_TCP, unix.TCP_KEEPCNT)}
			if want := [4]int{c.timeoutMs, 1, c.idle, c.count}; got != want {
				t.Errorf("%s connection with %+v: TCP_USER_TIMEOUT, SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPCNT = %v, want %v", side, c.tcp, got, want)
			}
		}
		d.Close()
		a.Close()
		l.Close()
	}
}
