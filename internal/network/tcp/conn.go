package tcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Peer names the TaskManager at the other end of a connection.
type Peer struct {
	// ID is its stable TaskManager id; Addr its data address.
	ID, Addr string
	// Session, if set, is the control-plane session the peer must announce
	// in its HELLO (the consumer side knows it from the deployment).
	Session string
}

func (p Peer) String() string { return fmt.Sprintf("TaskManager %q (%s)", p.ID, p.Addr) }

// ErrClosed is the cause of a connection closed by this TaskManager.
var ErrClosed = errors.New("closed by this TaskManager")

// link is what both sides of a connection share: the socket, the failure
// that ends it once, and the writer's wake-up. The reader and writer are
// the role's (Conn on the consumer side, serverConn on the producer side).
type link struct {
	nc   net.Conn
	peer Peer
	wake chan struct{} // cap 1: the writer has work
	done chan struct{} // closed when the link fails or closes
	wg   sync.WaitGroup

	mu  sync.Mutex // guards err, ctrl and the role's state (see Conn and serverConn)
	err error      // why the link ended; set once
	// ctrl holds encoded control frames (requests, cancels, ERRORs) for
	// the writer, which writes them before anything else it has.
	ctrl []byte
}

func newLink(nc net.Conn, peer Peer) *link {
	return &link{nc: nc, peer: peer, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// end records err as the link's end, once, closes the socket (which ends
// the reader and the writer) and reports whether this call ended it.
func (l *link) end(err error) (error, bool) {
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err, false
	}
	l.err = err
	close(l.done)
	l.mu.Unlock()
	l.nc.Close()
	return err, true
}

// Err is why the link ended, nil while it is up.
func (l *link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// cause names the peer and what happened to the connection in err, the
// error a read or a write returned.
func cause(peer Peer, err error) error {
	var what string
	var pe *peerError
	switch {
	case errors.As(err, &pe):
		return err
	case errors.Is(err, ErrClosed):
		return fmt.Errorf("tcp: data connection with %s: %w", peer, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		what = "closed by the peer"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		what = "reset by the peer"
	case errors.Is(err, syscall.ETIMEDOUT):
		what = "timed out: no acknowledgement within TCP keepalive or TCP_USER_TIMEOUT (taskmanager.network.tcp.user-timeout)"
	case errors.Is(err, net.ErrClosed):
		what = "closed by this TaskManager"
	default:
		what = "failed"
	}
	return fmt.Errorf("tcp: data connection with %s %s: %w", peer, what, err)
}

// peerError is an error that names the peer already.
type peerError struct{ msg string }

func (e *peerError) Error() string { return e.msg }

// protocolErr is a frame the peer should not have sent.
func protocolErr(peer Peer, format string, args ...any) error {
	return &peerError{fmt.Sprintf("tcp: protocol error on the data connection with %s: %s", peer, fmt.Sprintf(format, args...))}
}

// reported is an ERROR the peer sent about the whole connection.
func reported(peer Peer, text string) error {
	return &peerError{fmt.Sprintf("tcp: %s ended the data connection: %s", peer, text)}
}

// writeFull writes bufs with one writev where the connection supports it,
// keeping nb (the writer's own) so the write allocates nothing.
func writeFull(nc net.Conn, nb *net.Buffers, bufs [][]byte) error {
	*nb = bufs
	_, err := nb.WriteTo(nc)
	return err
}

// handshakeDeadline bounds the HELLO exchange; zero d means none.
func handshakeDeadline(nc net.Conn, d time.Duration) {
	if d > 0 {
		nc.SetDeadline(time.Now().Add(d))
	}
}
