//go:build !linux

package tcpopt

import (
	"errors"
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

// Read is implemented on Linux only.
func Read(*net.TCPConn) (Options, error) {
	return Options{}, errors.New("tcpopt: reading socket options is implemented on Linux only")
}
