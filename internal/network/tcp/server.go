package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/wire"
)

// Server is the producer side of a TaskManager's data plane: it accepts
// the connections consumers dial, answers their HELLO, and serves their
// PARTITION_REQUESTs from the partitions its producers publish.
type Server struct {
	cfg Config
	ln  net.Listener

	mu     sync.Mutex // guards parts, conns, hellos, closed
	parts  map[network.PartitionKey]*partition
	conns  map[*serverConn]struct{}
	hellos map[net.Conn]struct{} // accepted, in the HELLO exchange
	closed bool
	wg     sync.WaitGroup // the accept loop and every connection's goroutines
}

// partition is a published result partition, or the requests waiting
// for one not yet published.
type partition struct {
	rp      *network.ResultPartition // nil until published
	fail    func(sub int, err error)
	taken   []bool  // subpartitions with a receiver
	waiting []*view // requests before Publish, in arrival order
}

// NewServer returns a Server with cfg (zero fields take their defaults)
// that serves the connections ln accepts once Serve runs.
func NewServer(cfg Config, ln net.Listener) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, ln: ln, parts: map[network.PartitionKey]*partition{}, conns: map[*serverConn]struct{}{}, hellos: map[net.Conn]struct{}{}}, nil
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close, each served on its own reader and
// writer goroutines. It returns nil after Close.
func (s *Server) Serve() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("tcp: accepting data connections on %s: %w", s.ln.Addr(), err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.wg.Add(1)
		s.hellos[nc] = struct{}{}
		s.mu.Unlock()
		go s.handshake(nc)
	}
}

// Close stops accepting, fails every connection (ErrClosed) and waits for
// their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	for _, p := range s.parts {
		for _, v := range p.waiting {
			v.timer.Stop()
		}
	}
	for nc := range s.hellos {
		nc.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	for _, c := range conns {
		c.fail(ErrClosed)
	}
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Publish makes rp, the producer's partition key, available to requests,
// and serves those already waiting for it. fail, if set, learns of each
// subpartition whose remote consumer failed (the connection ended, the
// consumer refused the channel): the producer task should fail. It runs on the transport's goroutines and must not block.
func (s *Server) Publish(key network.PartitionKey, rp *network.ResultPartition, fail func(sub int, err error)) error {
	s.mu.Lock()
	p := s.parts[key]
	if p == nil {
		p = &partition{}
		s.parts[key] = p
	}
	if p.rp != nil {
		s.mu.Unlock()
		return fmt.Errorf("tcp: partition %+v is published already", key)
	}
	p.rp, p.fail, p.taken = rp, fail, make([]bool, len(rp.Subs))
	waiting := p.waiting
	p.waiting = nil
	type grant struct {
		v   *view
		sub int
		err error
	}
	var todo []grant
	for _, v := range waiting {
		v.timer.Stop()
		sub, err := p.take(key, v.req)
		todo = append(todo, grant{v, sub, err})
	}
	s.mu.Unlock()
	for _, g := range todo {
		if g.err != nil {
			g.v.c.failChannel(g.v, g.err)
			continue
		}
		g.v.attach(rp.Subs[g.sub], g.sub, fail)
	}
	return nil
}

// take claims the requested subpartition of p, published (s.mu held).
func (p *partition) take(key network.PartitionKey, r wire.PartitionRequest) (int, error) {
	i := int(r.Subpartition)
	switch {
	case int64(r.Subpartition) >= int64(len(p.rp.Subs)):
		return 0, fmt.Errorf("tcp: partition %+v has %d subpartitions, the request on channel %d asks for subpartition %d", key, len(p.rp.Subs), r.Channel, r.Subpartition)
	case p.taken[i]:
		return 0, fmt.Errorf("tcp: subpartition %d of partition %+v has a consumer already (channel %d asks again)", i, key, r.Channel)
	}
	p.taken[i] = true
	return i, nil
}

// Release forgets the partitions of a job's attempts up to attempt, as
// network.LocalShuffle.Release does; requests still waiting for one fail.
func (s *Server) Release(job string, attempt int) {
	s.mu.Lock()
	var failed []*view
	for k, p := range s.parts {
		if k.Job == job && k.Attempt <= attempt {
			for _, v := range p.waiting {
				v.timer.Stop()
				failed = append(failed, v)
			}
			delete(s.parts, k)
		}
	}
	s.mu.Unlock()
	for _, v := range failed {
		v.c.failChannel(v, fmt.Errorf("tcp: partition %+v was released (its job attempt ended) before its producer published it", v.key()))
	}
}

// request serves a PARTITION_REQUEST at once, or queues it until Publish
// or the timeout.
func (s *Server) request(v *view) {
	key := v.key()
	s.mu.Lock()
	p := s.parts[key]
	if p == nil {
		p = &partition{}
		s.parts[key] = p
	}
	if p.rp == nil {
		p.waiting = append(p.waiting, v)
		v.timer = time.AfterFunc(s.cfg.PartitionRequestTimeout, func() { s.expire(v) })
		s.mu.Unlock()
		return
	}
	sub, err := p.take(key, v.req)
	rp, fail := p.rp, p.fail
	s.mu.Unlock()
	if err != nil {
		v.c.failChannel(v, err)
		return
	}
	v.attach(rp.Subs[sub], sub, fail)
}

// expire fails a request still waiting for its partition.
func (s *Server) expire(v *view) {
	key := v.key()
	s.mu.Lock()
	if !s.unwaitLocked(v) {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	v.c.failChannel(v, fmt.Errorf("tcp: partition %+v was not produced on TaskManager %q within %v of the request on channel %d (taskmanager.network.partition-request-timeout)", key, s.cfg.TaskManager, s.cfg.PartitionRequestTimeout, v.id))
}

// unwaitLocked takes v out of its partition's waiting requests, and the
// partition out of the table if nothing else holds it (s.mu held). It
// reports whether v was waiting.
func (s *Server) unwaitLocked(v *view) bool {
	key := v.key()
	p := s.parts[key]
	if p == nil {
		return false
	}
	for i, w := range p.waiting {
		if w == v {
			p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
			if p.rp == nil && len(p.waiting) == 0 {
				delete(s.parts, key)
			}
			return true
		}
	}
	return false
}

func (s *Server) handshake(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.hellos, nc)
		s.mu.Unlock()
	}()
	setNoDelay(nc)
	handshakeDeadline(nc, s.cfg.HelloTimeout)
	peer := Peer{Addr: nc.RemoteAddr().String()}
	dec, err := wire.NewDecoder(bufio.NewReaderSize(nc, s.cfg.ReadBufferSize), s.cfg.BufferSize)
	if err != nil {
		nc.Close()
		s.cfg.Logger.Error("tcp: data connection refused", "peer", peer.Addr, "err", err)
		return
	}
	h, err := dec.ReadHello()
	if err != nil {
		nc.Close()
		s.cfg.Logger.Warn("tcp: data connection refused", "peer", peer.Addr, "err", err)
		return
	}
	peer.ID = h.TaskManager
	want := s.cfg.hello()
	want.Session = h.Session // a consumer's session is its own; this side expects none
	out, _ := wire.AppendHello(nil, s.cfg.hello())
	if err := h.Check(want); err != nil {
		err = fmt.Errorf("tcp: data connection from %s refused: %w", peer, err)
		out = wire.AppendError(out, wire.ErrorFrame{Channel: wire.AllChannels, Text: err.Error()})
		nc.Write(out)
		nc.Close()
		s.cfg.Logger.Warn("tcp: data connection refused", "peer", peer.String(), "err", err)
		return
	}
	if _, err := nc.Write(out); err != nil {
		nc.Close()
		s.cfg.Logger.Warn("tcp: data connection lost during HELLO", "peer", peer.String(), "err", err)
		return
	}
	nc.SetDeadline(time.Time{})
	c := &serverConn{link: newLink(nc, peer), s: s, dec: dec}
	c.hdrs = make([]byte, 0, maxFramesPerWrite*wire.BufferHeaderSize)
	s.mu.Lock()
	delete(s.hellos, nc)
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(1)
	go c.write()
	c.read()
}

// serverConn is the producer side of one connection: the views of the
// subpartitions its consumer requested, dense by channel id.
type serverConn struct {
	*link
	s   *Server
	dec *wire.Decoder

	views []*view // by channel id, nil once ended; guarded by link.mu, appended by the reader alone

	// guarded by link.mu
	queue []out // buffers to write: the priority part, then the rest in delivery order
	prio  int   // the priority part of queue: priority events and the data they must not pass
	spare []out // the writer's other queue, swapped with queue
	// others is DeliverPriority's scratch (link.mu held): the entries of
	// other channels while those of the event's channel move ahead.
	others []out

	// the writer's own
	vec  [][]byte
	hdrs []byte
	nb   net.Buffers
	done []out
}

// out is one buffer to write, the view it goes to and its sequence
// number, taken when the subpartition delivered it (the ledger's order).
type out struct {
	v        *view
	b        *network.Buffer
	seq      uint32
	priority bool
}

// view is one requested subpartition as seen by the connection: the
// Receiver the subpartition delivers to.
type view struct {
	c     *serverConn
	id    uint32
	req   wire.PartitionRequest
	timer *time.Timer // while waiting for Publish; guarded by Server.mu

	mu     sync.Mutex // guards sub, fail, credit; held while attaching and granting, so no grant precedes Attach
	sub    *network.Subpartition
	subIdx int
	fail   func(sub int, err error)
	credit int // ADD_CREDIT received before the attach

	// guarded by link.mu
	gone bool          // ended, cancelled or failed: deliveries are dropped
	seq  wire.Sequence // numbers buffers as the subpartition delivers them
}

func (v *view) key() network.PartitionKey { return network.PartitionKey(v.req.Key) }

// attach connects the view to its subpartition with the request's credit.
func (v *view) attach(sub *network.Subpartition, idx int, fail func(int, error)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.isGone() {
		return
	}
	v.sub, v.subIdx, v.fail = sub, idx, fail
	sub.Attach(v, int(v.req.Credit)+v.credit)
	v.credit = 0
}

func (v *view) isGone() bool {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	return v.gone
}

// grant passes an ADD_CREDIT on to the subpartition.
func (v *view) grant(n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.isGone():
	case v.sub == nil:
		v.credit += n
	default:
		v.sub.Grant(n)
	}
}

// Deliver queues b for the writer (the subpartition's lock is held).
func (v *view) Deliver(b *network.Buffer) {
	c := v.c
	c.mu.Lock()
	if c.err != nil || v.gone {
		c.mu.Unlock()
		b.Recycle()
		return
	}
	c.queue = append(c.queue, out{v: v, b: b, seq: v.seq.Take()})
	if b.Kind == network.KindEndOfPartition {
		// The producer is done with this channel: a failure of the
		// connection from now on is the consumer's alone.
		v.gone = true
		c.views[v.id] = nil
	}
	c.mu.Unlock()
	c.signal()
}

// DeliverPriority queues the priority event b (an unaligned barrier; the
// subpartition's lock is held) ahead of every other channel's buffers, but
// behind what this channel's ledger released before it (decision 21): the
// event and this channel's queued buffers move to the end of the queue's
// priority part, in their order. So the writer sends priority events
// before any data it has not started on, and within a channel in the
// ledger's order, which the sequence numbers record: the receiver checks
// that a priority event carries the next one, so that every buffer it
// overtakes in the receiver's queue came before it.
func (v *view) DeliverPriority(b *network.Buffer) {
	c := v.c
	c.mu.Lock()
	if c.err != nil || v.gone {
		c.mu.Unlock()
		b.Recycle()
		return
	}
	q, others, w := c.queue, c.others[:0], c.prio
	for _, o := range q[c.prio:] {
		if o.v == v {
			q[w] = o
			w++
		} else {
			others = append(others, o)
		}
	}
	q = append(q[:w], out{v: v, b: b, seq: v.seq.Take(), priority: true})
	c.queue, c.prio = append(q, others...), w+1
	clear(others)
	c.others = others[:0]
	c.mu.Unlock()
	c.signal()
}

// drop stops v, once: later deliveries are recycled, and a subpartition
// that is attached gets credit enough never to hold its producer back
// again. A non-nil err goes to the producer's failure hook if v was
// attached.
//
// Lock order: view.mu, then the subpartition's, then link.mu; a
// subpartition delivering (its lock held) takes only link.mu.
func (v *view) drop(err error) {
	c := v.c
	c.mu.Lock()
	if v.gone {
		c.mu.Unlock()
		return
	}
	v.gone = true
	c.views[v.id] = nil // the table keeps no ended channel alive
	c.mu.Unlock()
	v.mu.Lock()
	sub, fail, idx := v.sub, v.fail, v.subIdx
	if sub != nil {
		sub.Grant(1 << 30)
	}
	v.mu.Unlock()
	if sub != nil && fail != nil && err != nil {
		fail(idx, err)
	}
}

// failChannel fails one channel: ERROR to the consumer, the producer's
// hook told.
func (c *serverConn) failChannel(v *view, err error) {
	c.queueError(v.id, err)
	v.drop(err)
}

func (c *serverConn) queueError(ch uint32, err error) {
	c.mu.Lock()
	if c.err == nil {
		c.ctrl = wire.AppendError(c.ctrl, wire.ErrorFrame{Channel: ch, Text: err.Error()})
	}
	c.mu.Unlock()
	c.signal()
}

// fail ends the connection: every view is dropped and its producer told,
// queued buffers are recycled.
func (c *serverConn) fail(err error) {
	err, ended := c.end(cause(c.peer, err))
	if !ended {
		return
	}
	views := c.viewsSnapshot()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	for _, v := range views {
		if v != nil && c.s.unwaitLocked(v) {
			v.timer.Stop()
		}
	}
	c.s.mu.Unlock()
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	for _, o := range q {
		o.b.Recycle()
	}
	for _, v := range views {
		if v != nil {
			v.drop(err)
		}
	}
}

// viewsSnapshot is a copy of the views. Once the link has ended
// (link.err set) the reader adds no more, so fail's snapshot holds every
// view there will be.
func (c *serverConn) viewsSnapshot() []*view {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*view(nil), c.views...)
}

// read serves the consumer's frames (on the handshake's goroutine, whose
// Server.wg count it uses).
func (c *serverConn) read() {
	for {
		t, err := c.dec.Next()
		if err != nil {
			c.fail(err)
			return
		}
		switch t {
		case wire.TypePartitionRequest:
			r := c.dec.PartitionRequest()
			v := &view{c: c, id: r.Channel, req: r}
			c.mu.Lock()
			n, failed := len(c.views), c.err != nil
			if !failed && int64(r.Channel) == int64(n) {
				// Under the lock that fail's snapshot takes: a view is
				// either in it or never added.
				c.views = append(c.views, v)
			}
			c.mu.Unlock()
			if failed {
				return
			}
			if int64(r.Channel) != int64(n) {
				c.fail(protocolErr(c.peer, "PARTITION_REQUEST on channel %d, want the next dense id %d", r.Channel, n))
				return
			}
			c.s.request(v)
		case wire.TypeAddCredit:
			cr := c.dec.Credits()
			for i := range cr.Len() {
				p := cr.At(i)
				v, ok := c.view(p.Channel)
				if !ok {
					c.fail(protocolErr(c.peer, "ADD_CREDIT for channel %d, which was never requested", p.Channel))
					return
				}
				if v != nil {
					v.grant(int(p.Credit))
				}
			}
		case wire.TypeCancelRequest:
			ch := c.dec.CancelRequest()
			v, ok := c.view(ch)
			if !ok {
				c.fail(protocolErr(c.peer, "CANCEL_REQUEST for channel %d, which was never requested", ch))
				return
			}
			if v == nil {
				break // ended already
			}
			c.s.mu.Lock()
			if c.s.unwaitLocked(v) {
				v.timer.Stop()
			}
			c.s.mu.Unlock()
			v.drop(nil)
		case wire.TypeError:
			e := c.dec.ErrorFrame()
			c.fail(reported(c.peer, e.Text))
			return
		default:
			c.fail(protocolErr(c.peer, "a %s frame, which a consumer does not send", t))
			return
		}
	}
}

// view is channel ch's view: nil once it ended, ok false if it was never
// requested.
func (c *serverConn) view(ch uint32) (v *view, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(ch) >= int64(len(c.views)) {
		return nil, false
	}
	return c.views[ch], true
}

// write sends queued control frames, then the queued buffers, gathered
// into writes of up to MaxWriteBytes, and recycles each buffer once
// written.
func (c *serverConn) write() {
	defer c.s.wg.Done()
	var ctrl []byte
	for {
		select {
		case <-c.wake:
		case <-c.link.done:
			return
		}
		for {
			c.mu.Lock()
			ctrl, c.ctrl = c.ctrl, ctrl[:0]
			q := c.queue
			c.queue, c.prio = c.spare[:0], 0
			c.mu.Unlock()
			if len(ctrl) == 0 && len(q) == 0 {
				c.spare = q
				break
			}
			err := c.writeBatch(ctrl, q)
			for i := range q {
				q[i].b.Recycle()
				q[i] = out{}
			}
			c.spare = q[:0]
			if err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// writeBatch writes ctrl and the BUFFER frames of q in writes of up to
// MaxWriteBytes (and maxFramesPerWrite frames).
func (c *serverConn) writeBatch(ctrl []byte, q []out) error {
	vec, hdrs, size := c.vec[:0], c.hdrs[:0], 0
	if len(ctrl) > 0 {
		vec, size = append(vec, ctrl), len(ctrl)
	}
	for _, o := range q {
		n := wire.BufferHeaderSize + len(o.b.Data)
		if len(vec) > 0 && (size+n > c.s.cfg.MaxWriteBytes || len(hdrs)+wire.BufferHeaderSize > cap(hdrs)) {
			if err := writeFull(c.nc, &c.nb, vec); err != nil {
				return err
			}
			vec, hdrs, size = vec[:0], hdrs[:0], 0
		}
		h := wire.BufferHeader{Channel: o.v.id, Sequence: o.seq, Backlog: uint32(o.v.sub.Backlog()), Kind: uint8(o.b.Kind), Priority: o.priority}
		var err error
		if vec, hdrs, err = wire.AppendBufferVec(vec, hdrs, h, o.b.Data); err != nil {
			return fmt.Errorf("tcp: encoding a buffer of channel %d: %w", o.v.id, err)
		}
		size += n
	}
	c.vec = vec[:0]
	if len(vec) == 0 {
		return nil
	}
	err := writeFull(c.nc, &c.nb, vec)
	clear(vec)
	return err
}
