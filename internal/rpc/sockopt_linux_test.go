package rpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/tcpopt"
)

// TestSocketOptions: connections dialed by Dialer and accepted by Listen
// carry keepalive and TCP_USER_TIMEOUT (decision 23), the defaults and
// the settings given.
func TestSocketOptions(t *testing.T) {
	custom := TCP{UserTimeout: 1500 * time.Millisecond, KeepAlive: net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: time.Second, Count: 2}}
	for tcp, want := range map[TCP]tcpopt.Options{
		{}:     {UserTimeout: 5 * time.Second, KeepAlive: true, KeepIdle: time.Second, KeepInterval: time.Second, KeepCount: 5, NoDelay: true},
		custom: {UserTimeout: 1500 * time.Millisecond, KeepAlive: true, KeepIdle: 3 * time.Second, KeepInterval: time.Second, KeepCount: 2, NoDelay: true},
	} {
		l, err := Listen(context.Background(), "127.0.0.1:0", tcp)
		if err != nil {
			t.Fatal(err)
		}
		if d, a, err := tcpopt.Probe(context.Background(), l, Dialer(tcp)); err != nil || d != want || a != want {
			t.Errorf("with %+v: dialed %+v, accepted %+v, %v; want %+v", tcp, d, a, err, want)
		}
		l.Close()
	}
}
