//go:build !linux

package rpc

import (
	"net"
	"syscall"
	"time"
)

// userTimeoutControl does nothing where TCP_USER_TIMEOUT does not exist:
// keepalive alone bounds a silent connection there.
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}

func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }
