//go:build !linux

package tcpopt

import (
	"net"
	"syscall"
	"time"
)

// UserTimeoutControl returns nil where TCP_USER_TIMEOUT does not exist:
// keepalive alone bounds a silent connection there.
func UserTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}

// SetUserTimeout does nothing where TCP_USER_TIMEOUT does not exist.
func SetUserTimeout(*net.TCPConn, time.Duration) error { return nil }
