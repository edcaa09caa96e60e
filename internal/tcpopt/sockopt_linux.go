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

// Read returns c's options as the kernel reports them, so a test or a
// diagnostic sees what a connection really carries.
func Read(c *net.TCPConn) (Options, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Options{}, err
	}
	var v [6]int
	var serr error
	opts := [6][2]int{{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT}, {unix.SOL_SOCKET, unix.SO_KEEPALIVE},
		{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE}, {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL}, {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
		{unix.IPPROTO_TCP, unix.TCP_NODELAY}}
	err = rc.Control(func(fd uintptr) {
		for i, o := range opts {
			if v[i], serr = unix.GetsockoptInt(int(fd), o[0], o[1]); serr != nil {
				serr = fmt.Errorf("tcpopt: reading option %d of level %d of %s: %w", o[1], o[0], c.RemoteAddr(), serr)
				return
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return Options{}, err
	}
	return Options{UserTimeout: time.Duration(v[0]) * time.Millisecond, KeepAlive: v[1] != 0, KeepIdle: time.Duration(v[2]) * time.Second,
		KeepInterval: time.Duration(v[3]) * time.Second, KeepCount: v[4], NoDelay: v[5] != 0}, nil
}
