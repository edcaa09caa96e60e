package tcp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/wire"
)

// Conn is the consumer side of one connection to a producer TaskManager:
// its remote input channels, dense by id in request order.
type Conn struct {
	*link
	cfg Config
	dec *wire.Decoder

	// guarded by link.mu
	chans []*Channel // by id; nil once ended, cancelled or failed (frames still in flight are skipped)
	dirty []*Channel // channels with credit to announce, each once

	// the writer's own
	credits []wire.Credit
	buf     []byte
}

// Channel is one remote input channel: the consuming end of a
// subpartition in another TaskManager, whose buffers arrive in the
// channel's own pool (BuffersPerChannel buffers: its exclusive credit),
// and, while the producer's backlog exceeds that credit, in floating
// buffers taken from its gate's pool (Request.Floating).
//
// Credit is what the channel can hold: every free buffer of its own pool
// and every floating buffer it took and has not filled is credit granted
// (credit), so a data BUFFER always finds a buffer without waiting. A
// floating buffer the consumer recycles goes back to the gate's pool; the
// channel takes another only while the producer's latest backlog exceeds
// its credit, so floating buffers go back once the backlog is gone.
type Channel struct {
	c    *Conn
	id   uint32
	req  Request
	in   *network.InputChannel
	pool *network.BufferPool

	// guarded by link.mu
	state    chanState
	credit   int // granted and not yet used by a data BUFFER
	announce int // granted and not yet sent in ADD_CREDIT
	dirty    bool
	floating []*network.Buffer // taken from Request.Floating, not yet filled: part of credit
	backlog  int               // the producer's, as its latest BUFFER said

	seq wire.Sequence // the reader's
}

type chanState uint8

const (
	chanOpen      chanState = iota
	chanEnded               // end-of-partition arrived
	chanCancelled           // Cancel: frames still in flight are dropped
	chanFailed
)

// Request asks for one subpartition of a partition in the peer.
type Request struct {
	Key          network.PartitionKey
	Subpartition int
	// Gate, Input and Channel place the new input channel, as
	// network.Connect does; the gate must not be polled yet.
	Gate           *network.InputGate
	Input, Channel int
	// Fail, if set, is called once if the channel fails: the connection
	// ended, the producer refused the request or its partition did not
	// appear in time. It runs on the connection's goroutines and must not
	// block.
	Fail func(error)
	// Floating, if set, is the gate's pool of floating buffers (Flink's
	// taskmanager.network.memory.floating-buffers-per-gate), shared by its
	// remote channels of every connection: a channel whose producer's
	// backlog exceeds its credit takes buffers from it (TryRequest, never
	// waiting) and grants them as credit. Nil: exclusive credit only.
	Floating *network.BufferPool
}

// Dial connects to peer's Server and exchanges HELLO: a peer of another
// build, epoch or session, or another TaskManager than peer.ID, is
// refused naming both values.
func Dial(ctx context.Context, cfg Config, d Dialer, peer Peer) (*Conn, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	nc, err := d.DialContext(dctx, "tcp", peer.Addr)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("tcp: connecting to %s (taskmanager.network.netty.client.connectTimeoutSec %v): %w", peer, cfg.ConnectTimeout, err)
	}
	c, err := handshake(cfg, nc, peer)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.wg.Add(2)
	go c.read()
	go c.write()
	return c, nil
}

func handshake(cfg Config, nc net.Conn, peer Peer) (*Conn, error) {
	setNoDelay(nc)
	handshakeDeadline(nc, cfg.HelloTimeout)
	hello, _ := wire.AppendHello(nil, cfg.hello())
	if _, err := nc.Write(hello); err != nil {
		return nil, cause(peer, fmt.Errorf("sending HELLO: %w", err))
	}
	dec, err := wire.NewDecoder(bufio.NewReaderSize(nc, cfg.ReadBufferSize), cfg.BufferSize)
	if err != nil {
		return nil, err
	}
	h, err := dec.ReadHello()
	if err != nil {
		return nil, cause(peer, fmt.Errorf("reading HELLO: %w", err))
	}
	want := cfg.hello()
	want.Session = peer.Session
	if peer.Session == "" {
		want.Session = h.Session
	}
	err = h.Check(want)
	if err == nil && peer.ID != "" && h.TaskManager != peer.ID {
		err = fmt.Errorf("tcp: HELLO from %s: it is TaskManager %q, this TaskManager dialed %q", peer.Addr, h.TaskManager, peer.ID)
	}
	if err != nil {
		err = fmt.Errorf("tcp: data connection to %s refused: %w", peer, err)
		nc.Write(wire.AppendError(nil, wire.ErrorFrame{Channel: wire.AllChannels, Text: err.Error()}))
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return &Conn{link: newLink(nc, peer), cfg: cfg, dec: dec}, nil
}

// Peer is the producer TaskManager at the other end.
func (c *Conn) Peer() Peer { return c.peer }

// Done is closed when the connection has failed or closed (Err says why).
func (c *Conn) Done() <-chan struct{} { return c.link.done }

// Close closes the connection, failing its open channels with ErrClosed,
// and waits for its goroutines.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	c.wg.Wait()
	return nil
}

// Request adds an input channel to r.Gate whose buffers come from the
// peer's subpartition r.Subpartition of r.Key, with BuffersPerChannel
// exclusive buffers (reserved from cfg.Budget) as its initial credit. The
// producer need not have published the partition yet: the request waits
// for it up to PartitionRequestTimeout.
func (c *Conn) Request(r Request) (*Channel, error) {
	bpc, size := c.cfg.BuffersPerChannel, c.cfg.BufferSize
	var pool *network.BufferPool
	if c.cfg.Budget != nil {
		var err error
		if pool, err = c.cfg.Budget.NewPool(bpc, bpc, size); err != nil {
			return nil, fmt.Errorf("tcp: the input channel for subpartition %d of %+v from %s: %w", r.Subpartition, r.Key, c.peer, err)
		}
	} else {
		pool = network.NewBufferPool(bpc, size)
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		pool.Close()
		return nil, err
	}
	ch := &Channel{c: c, id: uint32(len(c.chans)), req: r, pool: pool, credit: bpc}
	frame, err := wire.AppendPartitionRequest(c.ctrl, wire.PartitionRequest{Channel: ch.id, Key: wire.PartitionKey(r.Key),
		Subpartition: uint32(r.Subpartition), Credit: uint32(bpc)})
	if err != nil {
		c.mu.Unlock()
		pool.Close()
		return nil, fmt.Errorf("tcp: requesting subpartition %d of %+v from %s: %w", r.Subpartition, r.Key, c.peer, err)
	}
	c.ctrl = frame
	ch.in = r.Gate.AddChannel(r.Input, r.Channel, ch)
	c.chans = append(c.chans, ch)
	c.mu.Unlock()
	c.signal()
	return ch, nil
}

// Input is the channel's place in its gate.
func (ch *Channel) Input() *network.InputChannel { return ch.in }

// Grant is network.Sender, called when the consumer has recycled a data
// buffer (InputChannel.ReturnCredit, after Buffer.Recycle, as a task does:
// credit is counted from the buffers back, not from n): the channel grants
// the producer what it can hold now (refillLocked), its own pool's buffer
// back or, for a floating one, another while the backlog wants it.
// Credits of all channels are batched into the writer's next ADD_CREDIT.
func (ch *Channel) Grant(int) {
	c := ch.c
	c.mu.Lock()
	if ch.state != chanOpen || !ch.refillLocked() {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.signal()
}

// refillLocked raises the channel's credit to the buffers it can hold: the
// free ones of its own pool, the floating ones it holds, and more floating
// ones while the producer's backlog exceeds its credit (link.mu held). It
// reports whether there is credit to announce.
func (ch *Channel) refillLocked() bool {
	if free := ch.c.cfg.BuffersPerChannel - ch.pool.InUse() + len(ch.floating); free > ch.credit {
		ch.announce += free - ch.credit
		ch.credit = free
	}
	for ch.req.Floating != nil && ch.credit < ch.backlog {
		b := ch.req.Floating.TryRequest()
		if b == nil {
			break // the gate's are taken: another try at the next buffer or recycle
		}
		ch.floating = append(ch.floating, b)
		ch.credit++
		ch.announce++
	}
	if ch.announce == 0 {
		return false
	}
	if !ch.dirty {
		ch.dirty = true
		ch.c.dirty = append(ch.c.dirty, ch)
	}
	return true
}

// dropFloatingLocked takes the channel's unfilled floating buffers, for the
// caller to recycle into the gate's pool once link.mu is released.
func (ch *Channel) dropFloatingLocked() []*network.Buffer {
	f := ch.floating
	ch.floating = nil
	return f
}

func recycleAll(bufs []*network.Buffer) {
	for _, b := range bufs {
		b.Recycle()
	}
}

// Cancel tells the producer the consumer is done (CANCEL_REQUEST):
// frames still in flight are dropped. The channel's pool is closed.
func (ch *Channel) Cancel() {
	c := ch.c
	c.mu.Lock()
	if ch.state != chanOpen && ch.state != chanEnded {
		c.mu.Unlock()
		return
	}
	open := ch.state == chanOpen
	ch.state = chanCancelled
	c.chans[ch.id] = nil
	if open && c.err == nil {
		c.ctrl = wire.AppendCancelRequest(c.ctrl, ch.id)
	}
	floating := ch.dropFloatingLocked()
	c.mu.Unlock()
	recycleAll(floating)
	ch.pool.Close()
	c.signal()
}

// failChannel fails one open channel (its producer refused it).
func (c *Conn) failChannel(ch *Channel, err error) {
	c.mu.Lock()
	open := ch.state == chanOpen
	var floating []*network.Buffer
	if open {
		ch.state = chanFailed
		c.chans[ch.id] = nil
		floating = ch.dropFloatingLocked()
	}
	c.mu.Unlock()
	if open {
		recycleAll(floating)
		ch.pool.Close()
		if ch.req.Fail != nil {
			ch.req.Fail(err)
		}
	}
}

// fail ends the connection and fails every open channel at once with the
// cause, which names the peer.
func (c *Conn) fail(err error) {
	err, ended := c.end(cause(c.peer, err))
	if !ended {
		return
	}
	c.mu.Lock()
	var failed []*Channel
	var floating []*network.Buffer
	for i, ch := range c.chans {
		if ch != nil && ch.state == chanOpen {
			ch.state = chanFailed
			failed = append(failed, ch)
			floating = append(floating, ch.dropFloatingLocked()...)
		}
		c.chans[i] = nil
	}
	c.mu.Unlock()
	recycleAll(floating)
	for _, ch := range failed {
		ch.pool.Close()
		if ch.req.Fail != nil {
			ch.req.Fail(err)
		}
	}
}

func (c *Conn) read() {
	defer c.wg.Done()
	for {
		t, err := c.dec.Next()
		if err != nil {
			c.fail(err)
			return
		}
		switch t {
		case wire.TypeBuffer:
			err = c.readBuffer()
		case wire.TypeError:
			e := c.dec.ErrorFrame()
			if e.Channel == wire.AllChannels {
				err = reported(c.peer, e.Text)
				break
			}
			ch, ok := c.channel(e.Channel)
			if !ok {
				err = protocolErr(c.peer, "ERROR for channel %d, which was never requested: %s", e.Channel, e.Text)
				break
			}
			if ch == nil {
				break // ended or cancelled already
			}
			c.failChannel(ch, fmt.Errorf("tcp: %s refused channel %d (subpartition %d of %+v): %s", c.peer, e.Channel, ch.req.Subpartition, ch.req.Key, e.Text))
		default:
			err = protocolErr(c.peer, "a %s frame, which a producer does not send", t)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// channel is channel id: nil once it ended, ok false if it was never
// requested.
func (c *Conn) channel(id uint32) (ch *Channel, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(id) >= int64(len(c.chans)) {
		return nil, false
	}
	return c.chans[id], true
}

// readBuffer reads the payload of the BUFFER the decoder stands at into a
// buffer of its channel's pool and delivers it.
func (c *Conn) readBuffer() error {
	h := c.dec.Buffer()
	c.mu.Lock()
	if int64(h.Channel) >= int64(len(c.chans)) {
		c.mu.Unlock()
		return protocolErr(c.peer, "BUFFER on channel %d, which was never requested", h.Channel)
	}
	ch := c.chans[h.Channel]
	if ch == nil || ch.state != chanOpen {
		c.mu.Unlock()
		return nil // ended, cancelled or failed: the frame is skipped
	}
	switch next := ch.seq.Next(); {
	case h.Kind == wire.KindData && ch.credit == 0:
		c.mu.Unlock()
		return protocolErr(c.peer, "a data BUFFER on channel %d without credit (sequence %d)", h.Channel, h.Sequence)
	case h.Priority && h.Sequence-next-1 < 1<<31:
		// Decision 21: a priority event overtakes only what reached this
		// side before it, so it must carry the next sequence number; else
		// the buffers it overtook are still in flight and its checkpoint's
		// channel state would miss them.
		c.mu.Unlock()
		return protocolErr(c.peer, "a priority event (an unaligned checkpoint barrier) on channel %d with sequence %d overtook %d buffers "+
			"the producer had released before it, which have not arrived (expected sequence %d): its channel state would be incomplete",
			h.Channel, h.Sequence, h.Sequence-next, next)
	}
	if err := ch.seq.Check(h.Channel, h.Sequence); err != nil {
		c.mu.Unlock()
		return protocolErr(c.peer, "%v", err)
	}
	var b *network.Buffer
	if h.Kind == wire.KindData {
		// Credit is a free buffer of the channel's pool or a floating one
		// it holds.
		ch.credit--
		if b = ch.pool.TryRequest(); b == nil && len(ch.floating) > 0 {
			n := len(ch.floating) - 1
			b, ch.floating[n] = ch.floating[n], nil
			ch.floating = ch.floating[:n]
		}
	}
	ch.backlog = int(h.Backlog)
	announce := ch.req.Floating != nil && ch.credit < ch.backlog && ch.refillLocked()
	c.mu.Unlock()
	if announce {
		c.signal()
	}
	switch {
	case h.Kind != wire.KindData:
		b = &network.Buffer{Kind: network.Kind(h.Kind), Data: make([]byte, h.Len)}
	case b == nil:
		// Only while a recycled buffer is still on its way into the
		// pool (its credit counted as it left the consumer).
		var err error
		if b, err = ch.pool.Request(c.link.done); err != nil {
			return err
		}
	}
	data, err := c.dec.ReadPayload(b.Data[:0])
	if err != nil {
		b.Recycle()
		return err
	}
	b.Data = data
	end := b.Kind == network.KindEndOfPartition
	if end {
		c.mu.Lock()
		ch.state = chanEnded
		c.chans[ch.id] = nil
		floating := ch.dropFloatingLocked()
		c.mu.Unlock()
		recycleAll(floating)
	}
	if h.Priority {
		// Overtakes every buffer queued in the channel, which are exactly
		// those with a lower sequence number not yet taken by the consumer,
		// and counts them (Buffer.Overtaken) as local delivery does.
		ch.in.DeliverPriority(b)
	} else {
		ch.in.Deliver(b)
	}
	if end {
		ch.pool.Close() // its budget share goes back; buffers still out may come home
	}
	return nil
}

// write sends queued control frames and the batched credits.
func (c *Conn) write() {
	defer c.wg.Done()
	var ctrl []byte
	for {
		select {
		case <-c.wake:
		case <-c.link.done:
			return
		}
		c.mu.Lock()
		ctrl, c.ctrl = c.ctrl, ctrl[:0]
		credits := c.credits[:0]
		for i, ch := range c.dirty {
			if ch.state == chanOpen && ch.announce > 0 {
				credits = append(credits, wire.Credit{Channel: ch.id, Credit: uint32(ch.announce)})
			}
			ch.announce, ch.dirty = 0, false
			c.dirty[i] = nil
		}
		c.dirty = c.dirty[:0]
		c.mu.Unlock()
		c.credits = credits
		buf := append(c.buf[:0], ctrl...)
		for len(credits) > 0 {
			n := min(len(credits), wire.MaxCredits)
			buf, _ = wire.AppendAddCredit(buf, credits[:n])
			credits = credits[n:]
		}
		c.buf = buf
		if len(buf) == 0 {
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(err)
			return
		}
	}
}
