package tcp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/tcpopt"
)

// TestSocketOptions: data connections dialed by NewDialer and accepted by
// Listen carry keepalive and TCP_USER_TIMEOUT (decision 23), the defaults
// and the settings given.
func TestSocketOptions(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want tcpopt.Options
	}{
		{Config{}, tcpopt.Options{UserTimeout: DefaultUserTimeout, KeepAlive: true, KeepIdle: DefaultKeepAlive.Idle, KeepInterval: DefaultKeepAlive.Interval,
			KeepCount: DefaultKeepAlive.Count, NoDelay: true}},
		{Config{UserTimeout: 1500 * time.Millisecond, KeepAlive: net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: 2 * time.Second, Count: 2}},
			tcpopt.Options{UserTimeout: 1500 * time.Millisecond, KeepAlive: true, KeepIdle: 3 * time.Second, KeepInterval: 2 * time.Second, KeepCount: 2, NoDelay: true}},
	} {
		l, err := Listen(context.Background(), "127.0.0.1:0", c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d, a, err := tcpopt.Probe(context.Background(), l, NewDialer(c.cfg).DialContext); err != nil || d != c.want || a != c.want {
			t.Errorf("with %+v: dialed %+v, accepted %+v, %v; want %+v", c.cfg, d, a, err, c.want)
		}
		l.Close()
	}
}
