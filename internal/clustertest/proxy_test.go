package clustertest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echo serves one line echo per connection until closed.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(limit))
	got, err := r.ReadString('\n')
	if err != nil {
		return time.Since(start), err
	}
	if got != line+"\n" {
		t.Fatalf("echoed %q, want %q", got, line)
	}
	return time.Since(start), nil
}

// TestProxy: it passes bytes in order, delays them by at least the delay
// each way, holds them while silent (the connection stays open) and
// delivers them when healed, and resets connections.
func TestProxy(t *testing.T) {
	p, err := NewProxy(echo(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundTrip(t, c, r, "plain", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetDelay(50*time.Millisecond, 20*time.Millisecond)
	for i := range 5 {
		took, err := roundTrip(t, c, r, "delayed", 5*time.Second)
		if err != nil || took < 100*time.Millisecond {
			t.Fatalf("round trip %d took %v (%v); want at least 100ms through two delayed directions", i, took, err)
		}
	}
	p.SetDelay(0, 0)
	p.Silence()
	if _, err := roundTrip(t, c, r, "held", 300*time.Millisecond); !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
		t.Fatalf("through a silent proxy: %v; want a read timeout", err)
	}
	p.Heal()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after healing: %q, %v; want the held line", got, err)
	}
	p.Reset()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after Reset: %v; want a connection reset", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
