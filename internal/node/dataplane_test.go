package node

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/rpc"
)

// TestAdvertise: a TaskManager advertises its data port on the host it was
// given; with an unspecified host, on the local address of a connection to
// the JobManager (Flink's taskmanager.host rule); and when the JobManager
// cannot be reached for that, it says so, naming the flag.
func TestAdvertise(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4zero, Port: 41234}
	jm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer jm.Close()
	go func() {
		for {
			c, err := jm.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, c := range []struct{ configured, want string }{
		{"10.1.2.3:0", "10.1.2.3:41234"},
		{"tm-host.example:6121", "tm-host.example:41234"},
		{":0", "127.0.0.1:41234"},
		{"0.0.0.0:6121", "127.0.0.1:41234"},
		{"[::]:0", "127.0.0.1:41234"},
	} {
		got, err := advertise(context.Background(), c.configured, bound, jm.Addr().String(), rpc.Backoff{})
		if err != nil || got != c.want {
			t.Errorf("--data-address %s: got %q, %v; want %q", c.configured, got, err, c.want)
		}
	}
	gone := jm.Addr().String()
	jm.Close()
	_, err = advertise(context.Background(), ":0", bound, gone, rpc.Backoff{Initial: time.Millisecond, Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "--data-address") || !strings.Contains(err.Error(), gone) {
		t.Fatalf("an unreachable JobManager: got %v; want an error naming --data-address and %s", err, gone)
	}
}
