package tcpopt

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Options are a connected socket's options that Weir's connections set
// (docs/distributed-runtime.md, decision 23), as the kernel reports them
// (Read).
type Options struct {
	UserTimeout  time.Duration // TCP_USER_TIMEOUT; 0 is the kernel's default
	KeepAlive    bool          // SO_KEEPALIVE
	KeepIdle     time.Duration // TCP_KEEPIDLE
	KeepInterval time.Duration // TCP_KEEPINTVL
	KeepCount    int           // TCP_KEEPCNT
	NoDelay      bool          // TCP_NODELAY
}

// Probe dials l with dial, accepts the connection, and returns the options
// of both ends (Read), closing them: how a package checks what its
// listener and dialer set, in one call.
func Probe(ctx context.Context, l net.Listener, dial func(ctx context.Context, network, address string) (net.Conn, error)) (dialed, accepted Options, err error) {
	type acceptance struct {
		c   net.Conn
		err error
	}
	ac := make(chan acceptance, 1)
	go func() {
		c, err := l.Accept()
		ac <- acceptance{c, err}
	}()
	d, err := dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		return Options{}, Options{}, err
	}
	defer d.Close()
	a := <-ac
	if a.err != nil {
		return Options{}, Options{}, a.err
	}
	defer a.c.Close()
	dc, ok1 := d.(*net.TCPConn)
	acc, ok2 := a.c.(*net.TCPConn)
	if !ok1 || !ok2 {
		return Options{}, Options{}, fmt.Errorf("tcpopt: probing %s: the dialed (%T) or the accepted (%T) connection is not TCP", l.Addr(), d, a.c)
	}
	if dialed, err = Read(dc); err == nil {
		accepted, err = Read(acc)
	}
	return dialed, accepted, err
}
