package tcpopt

import (
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// UserTimeoutControl returns a Control for net.Dialer or net.ListenConfig
// that sets TCP_USER_TIMEOUT on a socket before it connects or listens;
// d <= 0 leaves the kernel's default.
func UserTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if d <= 0 {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("tcpopt: setting TCP_USER_TIMEOUT to %v on %s: %w", d, address, err)
		}
		return nil
	}
}

// SetUserTimeout sets TCP_USER_TIMEOUT on a connected socket (an accepted
// one); d <= 0 leaves the kernel's default.
func SetUserTimeout(c *net.TCPConn, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return UserTimeoutControl(d)("tcp", c.RemoteAddr().String(), rc)
}
