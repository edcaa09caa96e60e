package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/weirhq/weir/internal/network/tcp"
	"github.com/weirhq/weir/internal/rpc"
	"github.com/weirhq/weir/internal/taskmanager"
)

// DefaultDataAddress is where a TaskManager's data plane listens by
// default: loopback, any free port.
const DefaultDataAddress = "127.0.0.1:0"

// leaderEpoch is the JobManager's leader epoch, fixed until high
// availability gives it meaning (decision 7); data connections carry it
// in their HELLO.
const leaderEpoch = 1

// dataPlane is a TaskManager process's data plane: one listener and
// tcp.Server for the process's life, shared by the TaskManagers of its
// successive sessions, each of which dials its own connections.
type dataPlane struct {
	srv  *tcp.Server
	cfg  tcp.Config
	addr string // advertised
	done chan struct{}
}

// startDataPlane listens on cfg.DataAddress and serves data connections.
// Its advertised address is cfg.AdvertisedDataAddress, else the bound one, or, when the host is
// unspecified (":0", "0.0.0.0:6121"), the local address of a connection
// to the JobManager (Flink's taskmanager.host rule, decision 1).
func startDataPlane(ctx context.Context, cfg TaskManagerConfig, build string) (*dataPlane, error) {
	tc := tcp.Config{TaskManager: cfg.ID, Epoch: leaderEpoch, BuildID: build, UserTimeout: cfg.DataUserTimeout, Logger: cfg.Logger}
	ln, err := tcp.Listen(ctx, cfg.DataAddress, tc)
	if err != nil {
		return nil, err
	}
	addr := cfg.AdvertisedDataAddress
	if addr == "" {
		addr, err = advertise(ctx, cfg.DataAddress, ln.Addr(), cfg.JobManager, cfg.Backoff)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv, err := tcp.NewServer(tc, ln)
	if err != nil {
		ln.Close()
		return nil, err
	}
	d := &dataPlane{srv: srv, cfg: tc, addr: addr, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		if err := srv.Serve(); err != nil {
			cfg.Logger.Error("the data plane stopped accepting connections", "taskmanager", cfg.ID, "address", addr, "err", err)
		}
	}()
	return d, nil
}

// forTaskManager is the data plane as a TaskManager of one session uses it.
func (d *dataPlane) forTaskManager() *taskmanager.DataPlane {
	return &taskmanager.DataPlane{Address: d.addr, Server: d.srv, Dialer: tcp.NewDialer(d.cfg), Client: d.cfg}
}

// close stops serving: every connection fails.
func (d *dataPlane) close() {
	d.srv.Close()
	<-d.done
}

// advertise returns the data address other TaskManagers dial: bound's
// port on configured's host, or on the local address this host reaches
// jobManager from when that host is unspecified. It retries the
// JobManager with b's backoff (rpc.Backoff's defaults when zero) until
// b.Timeout.
func advertise(ctx context.Context, configured string, bound net.Addr, jobManager string, b rpc.Backoff) (string, error) {
	host, _, err := net.SplitHostPort(configured)
	if err != nil {
		return "", fmt.Errorf("--data-address %q: %w", configured, err)
	}
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return net.JoinHostPort(host, port), nil
	}
	wait, most, attempt, timeout := b.Initial, b.Max, b.Attempt, b.Timeout
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	if most <= 0 {
		most = 30 * time.Second
	}
	if attempt <= 0 {
		attempt = 10 * time.Second
	}
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	jms := rpc.Addresses(jobManager) // every JobManager of an HA cluster: any will do
	for n := 0; ; n++ {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, attempt)
		c, err := d.DialContext(dctx, "tcp", jms[n%len(jms)])
		cancel()
		if err == nil {
			local := c.LocalAddr().(*net.TCPAddr).IP
			c.Close()
			return net.JoinHostPort(local.String(), port), nil
		}
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return "", fmt.Errorf("finding the address to advertise for --data-address %s (the local address of a connection to the JobManager at %s): %w; "+
				"give the host to advertise in --data-address", configured, jobManager, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, most)
	}
}
