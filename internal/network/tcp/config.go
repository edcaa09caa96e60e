package tcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/wire"
	"github.com/weirhq/weir/internal/tcpopt"
)

// Config is a TaskManager's data-plane settings, for both its Server and
// its Conns. The zero value of every field but the identity means its
// default; Flink's names are in the comments where Flink has the setting.
type Config struct {
	// TaskManager, Session, Epoch and BuildID are this TaskManager's
	// identity, sent in HELLO: its stable id, its control-plane session,
	// the JobManager's leader epoch and its build id. A peer of another
	// epoch or build is refused.
	TaskManager, Session string
	Epoch                uint64
	BuildID              string

	// BufferSize is the size of a network buffer in bytes: the most a
	// BUFFER's data payload may have. Flink's taskmanager.memory.segment-size
	// (weir run --buffer-size); default DefaultBufferSize. Every
	// TaskManager of a cluster must use the same.
	BufferSize int
	// BuffersPerChannel is the exclusive credit of each remote input
	// channel: the buffers of its own pool, granted in its PARTITION_REQUEST.
	// Flink's taskmanager.network.memory.buffers-per-channel; default 2.
	BuffersPerChannel int
	// Budget, if set, is the TaskManager's network memory: each remote
	// input channel reserves BuffersPerChannel buffers of it (decision 20).
	Budget *network.Budget

	// PartitionRequestTimeout bounds how long a PARTITION_REQUEST waits for
	// its producer to publish the partition (Server.Publish) before the
	// channel fails. Flink's taskmanager.network.partition-request-timeout;
	// default 10 s.
	PartitionRequestTimeout time.Duration
	// ConnectTimeout bounds a dial. Flink's
	// taskmanager.network.netty.client.connectTimeoutSec (120 s there);
	// default 10 s.
	ConnectTimeout time.Duration
	// HelloTimeout bounds the HELLO exchange on a new connection. Weir's
	// taskmanager.network.tcp.hello-timeout; default 10 s.
	HelloTimeout time.Duration
	// MaxWriteBytes bounds what the writer gathers into one writev.
	// Weir's taskmanager.network.tcp.max-write-bytes; default 256 KiB.
	MaxWriteBytes int
	// ReadBufferSize is the reader's bufio buffer. Payloads larger than it
	// are read straight from the socket into the receiver's pool buffer,
	// so keep it below BufferSize. Weir's taskmanager.network.tcp.read-buffer;
	// default 8 KiB.
	ReadBufferSize int

	// KeepAlive is set on every data socket (the default Dialer and
	// Listen). Flink's taskmanager.network.netty.client.tcp.keepIdleSec,
	// keepIntervalSec and keepCount; default 1 s, 1 s, 5 (DefaultKeepAlive).
	// Idle -1 turns keepalive off (net.KeepAliveConfig's rules).
	KeepAlive net.KeepAliveConfig
	// UserTimeout is TCP_USER_TIMEOUT (Linux): sent data or keepalive
	// probes unacknowledged this long abort the connection. Weir's
	// taskmanager.network.tcp.user-timeout; default 5 s, negative leaves
	// the kernel's default.
	UserTimeout time.Duration

	// Logger receives what fails outside any channel (a refused HELLO on
	// the Server); nil discards it.
	Logger *slog.Logger
}

// The defaults of Config.
const (
	DefaultBufferSize              = 32 << 10
	DefaultBuffersPerChannel       = 2
	DefaultPartitionRequestTimeout = 10 * time.Second
	DefaultConnectTimeout          = 10 * time.Second
	DefaultHelloTimeout            = 10 * time.Second
	DefaultMaxWriteBytes           = 256 << 10
	DefaultReadBufferSize          = 8 << 10
	DefaultUserTimeout             = 5 * time.Second
)

// DefaultKeepAlive probes an idle data connection after 1 s, every 1 s, 5
// times (decision 23), so a silent peer is an error within seconds.
var DefaultKeepAlive = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 5}

// maxFramesPerWrite bounds the frames of one writev, so the writer's
// header scratch has a fixed size.
const maxFramesPerWrite = 1024

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.BufferSize, DefaultBufferSize)
	def(&c.BuffersPerChannel, DefaultBuffersPerChannel)
	def(&c.MaxWriteBytes, DefaultMaxWriteBytes)
	def(&c.ReadBufferSize, DefaultReadBufferSize)
	defDur(&c.PartitionRequestTimeout, DefaultPartitionRequestTimeout)
	defDur(&c.ConnectTimeout, DefaultConnectTimeout)
	defDur(&c.HelloTimeout, DefaultHelloTimeout)
	defDur(&c.UserTimeout, DefaultUserTimeout)
	if c.KeepAlive == (net.KeepAliveConfig{}) {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.BufferSize < wire.MinBufferSize || c.BufferSize > wire.MaxBufferSize:
		return fmt.Errorf("tcp: a network buffer size of %d bytes, want %d to %d (taskmanager.memory.segment-size, weir run --buffer-size)", c.BufferSize, wire.MinBufferSize, wire.MaxBufferSize)
	case c.BuffersPerChannel < 1 || c.BuffersPerChannel > 1<<16:
		return fmt.Errorf("tcp: %d buffers per channel, want 1 to %d (taskmanager.network.memory.buffers-per-channel)", c.BuffersPerChannel, 1<<16)
	case c.MaxWriteBytes < c.BufferSize+wire.BufferHeaderSize:
		return fmt.Errorf("tcp: taskmanager.network.tcp.max-write-bytes is %d, less than one buffer and its header (%d)", c.MaxWriteBytes, c.BufferSize+wire.BufferHeaderSize)
	case c.ReadBufferSize < 64:
		return fmt.Errorf("tcp: taskmanager.network.tcp.read-buffer is %d bytes, want at least 64", c.ReadBufferSize)
	case c.PartitionRequestTimeout < 0 || c.ConnectTimeout < 0 || c.HelloTimeout < 0:
		return fmt.Errorf("tcp: negative timeout (partition request %v, connect %v, hello %v)", c.PartitionRequestTimeout, c.ConnectTimeout, c.HelloTimeout)
	}
	if _, err := wire.AppendHello(nil, c.hello()); err != nil {
		return fmt.Errorf("tcp: this TaskManager's identity: %w", err)
	}
	return nil
}

func (c Config) hello() wire.Hello {
	return wire.Hello{TaskManager: c.TaskManager, Session: c.Session, Epoch: c.Epoch, BuildID: c.BuildID}
}

// Dialer opens the consumer side's connections: a *net.Dialer, or a
// simulator's in-memory connections (decision 26: net.Conn is the seam).
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// NewDialer returns the Dialer of real TCP connections with cfg's keepalive
// and TCP_USER_TIMEOUT.
func NewDialer(cfg Config) Dialer {
	cfg = cfg.withDefaults()
	return &net.Dialer{KeepAliveConfig: cfg.KeepAlive, Control: tcpopt.UserTimeoutControl(cfg.UserTimeout)}
}

// Listen listens on address for a Server: real TCP, and every connection
// it accepts has cfg's keepalive and TCP_USER_TIMEOUT.
func Listen(ctx context.Context, address string, cfg Config) (net.Listener, error) {
	cfg = cfg.withDefaults()
	lc := net.ListenConfig{KeepAliveConfig: cfg.KeepAlive, Control: tcpopt.UserTimeoutControl(cfg.UserTimeout)}
	l, err := lc.Listen(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("tcp: listening for data connections on %s (weir taskmanager --data-address): %w", address, err)
	}
	return &optListener{Listener: l, timeout: cfg.UserTimeout}, nil
}

// optListener sets TCP_USER_TIMEOUT on each accepted connection (Linux
// copies it from the listening socket too; this does not rely on it).
type optListener struct {
	net.Listener
	timeout time.Duration
}

func (l *optListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok || tcpopt.SetUserTimeout(tc, l.timeout) == nil {
			return c, nil
		}
		c.Close() // the peer already went (the option fails on a dead socket): take the next
	}
}

// setNoDelay keeps TCP_NODELAY on (Go's default, made explicit): Weir
// batches by its buffer timeout and the writer's writev, not by Nagle.
func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}
