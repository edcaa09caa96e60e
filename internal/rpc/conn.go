package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/weirhq/weir/internal/tcpopt"
)

// trackedConn remembers the first error its reads returned, which says how
// the connection ended (the peer's FIN or reset, or this side's timeout)
// better than the HTTP/2 stream errors built on it.
type trackedConn struct {
	net.Conn
	mu      sync.Mutex // guards readErr
	readErr error
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.readErr == nil {
			c.readErr = err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *trackedConn) err() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// connEnd classifies the error that ended a connection: whether the peer
// ended it (FIN, reset), with a text naming what happened.
func connEnd(err error, peer string) (cause error, byPeer bool) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the connection was closed by %s: %w", peer, err), true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("the connection was reset by %s: %w", peer, err), true
	case errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Errorf("the connection to %s timed out (no acknowledgement within TCP keepalive or TCP_USER_TIMEOUT): %w", peer, err), false
	case errors.Is(err, net.ErrClosed):
		return fmt.Errorf("the connection to %s was closed by this side: %w", peer, err), false
	}
	return fmt.Errorf("the connection to %s failed: %w", peer, err), false
}

// Dialer returns the dial function of a client's connections: TCP with
// the keepalive and TCP_USER_TIMEOUT of t.
func Dialer(t TCP) func(ctx context.Context, network, address string) (net.Conn, error) {
	t = t.withDefaults()
	d := &net.Dialer{KeepAliveConfig: t.KeepAlive, Control: tcpopt.UserTimeoutControl(t.UserTimeout)}
	return d.DialContext
}

// Listen listens on address for a server: TCP, and every connection it
// accepts has the keepalive and TCP_USER_TIMEOUT of t.
func Listen(ctx context.Context, address string, t TCP) (net.Listener, error) {
	t = t.withDefaults()
	lc := net.ListenConfig{KeepAliveConfig: t.KeepAlive, Control: tcpopt.UserTimeoutControl(t.UserTimeout)}
	l, err := lc.Listen(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("rpc: listening on %s: %w", address, err)
	}
	return &userTimeoutListener{Listener: l, timeout: t.UserTimeout}, nil
}

// userTimeoutListener sets TCP_USER_TIMEOUT on each accepted connection
// (Linux copies it from the listening socket too; this does not rely on it).
type userTimeoutListener struct {
	net.Listener
	timeout time.Duration
}

func (l *userTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tcpopt.SetUserTimeout(tc, l.timeout); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// trackingListener wraps what it accepts in trackedConn.
type trackingListener struct{ net.Listener }

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c}, nil
}
