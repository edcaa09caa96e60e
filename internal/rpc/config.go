package rpc

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// The settings of the transport, by the names a node binds them to.
const (
	// SettingMaxMessageSize bounds one encoded message (Limits.MaxMessageSize).
	SettingMaxMessageSize = "rpc.max-message-size"
	// SettingSendQueueMessages bounds the messages a session has queued
	// and not yet written (Limits.SendQueueMessages).
	SettingSendQueueMessages = "rpc.send-queue.messages"
	// SettingSendQueueBytes bounds their bytes (Limits.SendQueueBytes).
	SettingSendQueueBytes = "rpc.send-queue.bytes"
)

// Limits bound what one session holds. The zero value of a field means its
// default.
type Limits struct {
	// MaxMessageSize bounds one message's frame, sent or received
	// (rpc.max-message-size; default protocol.MaxFrameSize). A larger
	// message is refused by the sender, and by a receiver whose limit is
	// lower than its peer's (which ends the session).
	MaxMessageSize int
	// SendQueueMessages and SendQueueBytes bound what a session has queued
	// and not yet written to its stream (rpc.send-queue.messages, default
	// 65536; rpc.send-queue.bytes, default 256 MiB). A message larger than
	// SendQueueBytes is queued when it is the only one. The writer drains
	// the queue as fast as the peer reads (HTTP/2 flow control), so it
	// fills only when the peer stops reading: the message that exceeds a
	// bound ends the session with an error naming the setting, and the
	// peer is then lost as a silent one would be, without ever blocking the
	// caller.
	SendQueueMessages int
	SendQueueBytes    int64
}

// The defaults of Limits and TCP.
const (
	DefaultSendQueueMessages = 65536
	DefaultSendQueueBytes    = 256 << 20
	DefaultUserTimeout       = 5 * time.Second
)

// DefaultKeepAlive probes an idle connection after 1 s, every 1 s, 5 times
// (decision 23: Flink's keepIdleSec, keepIntervalSec and keepCount, set
// short), so a silent peer is an error within seconds, not Linux's 2 hours.
var DefaultKeepAlive = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 5}

// envelopeOverhead bounds what an Envelope adds to its frame on the wire:
// the epoch and seq varints, the session id and the field tags and lengths.
const envelopeOverhead = 128

// maxSessionID bounds a session id in an envelope or a header.
const maxSessionID = 64

func (l Limits) withDefaults() Limits {
	if l.MaxMessageSize == 0 {
		l.MaxMessageSize = protocol.MaxFrameSize
	}
	if l.SendQueueMessages == 0 {
		l.SendQueueMessages = DefaultSendQueueMessages
	}
	if l.SendQueueBytes == 0 {
		l.SendQueueBytes = DefaultSendQueueBytes
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.MaxMessageSize < 64 || l.MaxMessageSize > protocol.MaxFrameSize:
		return fmt.Errorf("rpc: %s is %d bytes: it must be between 64 and %d (protocol.MaxFrameSize)", SettingMaxMessageSize, l.MaxMessageSize, protocol.MaxFrameSize)
	case l.SendQueueMessages < 1:
		return fmt.Errorf("rpc: %s is %d: it must be at least 1", SettingSendQueueMessages, l.SendQueueMessages)
	case l.SendQueueBytes < 1:
		return fmt.Errorf("rpc: %s is %d: it must be at least 1", SettingSendQueueBytes, l.SendQueueBytes)
	}
	return nil
}

// readMax is the largest envelope a receiver accepts.
func (l Limits) readMax() int { return l.MaxMessageSize + envelopeOverhead }

// TCP are the socket options of the connections a server accepts and a
// client dials (decision 23). The zero value means the defaults.
type TCP struct {
	// KeepAlive is set on every connection; Enable false with every other
	// field zero means DefaultKeepAlive, and Idle -1 turns keepalive off
	// (net.KeepAliveConfig's rules).
	KeepAlive net.KeepAliveConfig
	// UserTimeout is TCP_USER_TIMEOUT (Linux): the kernel aborts a
	// connection whose sent data or keepalive probes stay unacknowledged
	// this long. 0 means DefaultUserTimeout, negative leaves the kernel's
	// default (about 15 minutes of retransmits).
	UserTimeout time.Duration
}

func (t TCP) withDefaults() TCP {
	if t.KeepAlive == (net.KeepAliveConfig{}) {
		t.KeepAlive = DefaultKeepAlive
	}
	if t.UserTimeout == 0 {
		t.UserTimeout = DefaultUserTimeout
	}
	return t
}

// SessionEnd reports the end of a session, once, after the last message it
// delivered.
type SessionEnd struct {
	// TaskManager is the TaskManager's id, Session the session's.
	TaskManager, Session string
	// Cause says why it ended; never nil. It names the peer and, for a
	// limit, the setting.
	Cause error
	// ByPeer: the other side ended it (closed its stream, or its connection
	// closed or was reset, as when its process dies), so it knows the
	// session is over. False when this side ended it: Close, a limit, a
	// protocol error of the peer, or this side's own timeout (keepalive,
	// TCP_USER_TIMEOUT), after which the peer may still be alive.
	ByPeer bool
}

func (e SessionEnd) String() string {
	by := "this side"
	if e.ByPeer {
		by = "the peer"
	}
	return fmt.Sprintf("session %s of TaskManager %s ended by %s: %v", e.Session, e.TaskManager, by, e.Cause)
}

// Registration is what a TaskManager registers with: the protocol's
// registration and what only the transport carries for now.
type Registration struct {
	protocol.TaskManagerRegistration
	// DataAddress is where its data plane listens (host:port).
	DataAddress string
	// BuildID names the binary it runs (decision 4).
	BuildID string
	// Application is, in application mode, the digest of the application
	// it built (AppInfo.Digest); "" in session mode.
	Application string
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
