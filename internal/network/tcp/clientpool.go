package tcp

import (
	"context"
	"fmt"
	"sync"
)

// Client is a TaskManager's consumer side: one Conn per producer
// TaskManager (by id), dialed on first need and again after it ended.
type Client struct {
	cfg Config
	d   Dialer

	mu     sync.Mutex // guards conns, closed
	conns  map[string]*dialing
	closed bool
}

// dialing is a producer's connection, or the dial that makes it.
type dialing struct {
	ready chan struct{} // closed when the dial is done
	peer  Peer
	conn  *Conn
	err   error
}

// NewClient returns a Client dialing through d with cfg.
func NewClient(cfg Config, d Dialer) *Client {
	return &Client{cfg: cfg, d: d, conns: map[string]*dialing{}}
}

// Conn returns the live connection to peer, dialing one if there is none,
// the last one ended, or peer's address changed. Concurrent callers share
// one dial: one connection per TaskManager pair.
func (cl *Client) Conn(ctx context.Context, peer Peer) (*Conn, error) {
	for {
		cl.mu.Lock()
		if cl.closed {
			cl.mu.Unlock()
			return nil, fmt.Errorf("tcp: connecting to %s: %w", peer, ErrClosed)
		}
		e := cl.conns[peer.ID]
		if e == nil {
			e = &dialing{ready: make(chan struct{}), peer: peer}
			cl.conns[peer.ID] = e
			cl.mu.Unlock()
			return cl.dial(ctx, e)
		}
		cl.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("tcp: connecting to %s: %w", peer, ctx.Err())
		}
		if e.err == nil && e.conn.Err() == nil && e.peer == peer {
			return e.conn, nil
		}
		cl.mu.Lock()
		if cl.conns[peer.ID] == e {
			delete(cl.conns, peer.ID)
		}
		cl.mu.Unlock()
		if e.err != nil {
			return nil, e.err
		}
		e.conn.Close() // ended or stale: reap it, then dial again
	}
}

func (cl *Client) dial(ctx context.Context, e *dialing) (*Conn, error) {
	e.conn, e.err = Dial(ctx, cl.cfg, cl.d, e.peer)
	close(e.ready)
	cl.mu.Lock()
	closed := cl.closed
	if e.err != nil && cl.conns[e.peer.ID] == e {
		delete(cl.conns, e.peer.ID)
	}
	cl.mu.Unlock()
	if closed && e.err == nil {
		e.conn.Close()
		return nil, fmt.Errorf("tcp: connecting to %s: %w", e.peer, ErrClosed)
	}
	return e.conn, e.err
}

// Close closes every connection (their open channels fail with ErrClosed)
// and waits for their goroutines.
func (cl *Client) Close() {
	cl.mu.Lock()
	cl.closed = true
	var all []*dialing
	for _, e := range cl.conns {
		all = append(all, e)
	}
	cl.conns = map[string]*dialing{}
	cl.mu.Unlock()
	for _, e := range all {
		<-e.ready
		if e.err == nil {
			e.conn.Close()
		}
	}
}
