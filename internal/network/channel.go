package network

import "sync"

// Subpartition is the producing end of one channel: the part of a producer's
// output that goes to one consumer subtask.
type Subpartition struct {
	mu       sync.Mutex // guards ledger and scratch; held while delivering, so deliveries stay in order
	ledger   ledger
	scratch  []*Buffer
	receiver *InputChannel
}

// Add hands a finished buffer or an event to the channel. It never blocks:
// without credit the buffer waits in the backlog, which the producer's
// bounded pool limits (events in the backlog are bounded by its data, see
// ledger).
func (s *Subpartition) Add(b *Buffer) {
	s.mu.Lock()
	now, replaced := s.ledger.add(b)
	if now {
		s.receiver.deliver(b)
	}
	s.mu.Unlock()
	if replaced != nil {
		replaced.Recycle()
	}
}

// Grant gives the producer n more credits (free receiver slots) and delivers
// whatever backlog they allow.
func (s *Subpartition) Grant(n int) {
	s.mu.Lock()
	s.scratch = s.ledger.grant(n, s.scratch)
	for i, b := range s.scratch {
		s.receiver.deliver(b)
		s.scratch[i] = nil
	}
	s.mu.Unlock()
}

// Backlog is the number of finished buffers waiting for credit.
func (s *Subpartition) Backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledger.backlogLen()
}

// InputChannel is the consuming end of one channel, inside an InputGate.
type InputChannel struct {
	gate *InputGate
	// Input is the logical input of the consuming operator (0 for one-input
	// operators; 0 or 1 for two-input ones). Channel is the index of the
	// channel within that input, used for watermarks and end of input.
	Input, Channel int
	sender         *Subpartition // where credits go (local transport)

	// guarded by gate.mu
	queue    []*Buffer
	enqueued bool // in gate.ready
	blocked  bool // left out of polling (barrier alignment)
}

// ReturnCredit gives one slot back to the producer after the consumer is done
// with a data buffer of this channel (events cost no credit).
func (c *InputChannel) ReturnCredit() { c.sender.Grant(1) }

// deliver queues b. A watermark right behind another queued watermark
// replaces it, so a consumer that does not read cannot pile up events.
func (c *InputChannel) deliver(b *Buffer) {
	g := c.gate
	g.mu.Lock()
	if n := len(c.queue); b.Kind == KindWatermark && n > 0 && c.queue[n-1].Kind == KindWatermark {
		c.queue[n-1] = b
		g.mu.Unlock()
		return
	}
	c.queue = append(c.queue, b)
	if !c.enqueued && !c.blocked {
		c.enqueued = true
		g.ready = append(g.ready, c)
	}
	g.mu.Unlock()
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

// InputGate collects the input channels of one subtask, over all its inputs.
// The subtask's goroutine polls it; producers wake it through Notify.
type InputGate struct {
	mu       sync.Mutex      // guards ready and every channel's queue, enqueued, blocked
	ready    []*InputChannel // channels with queued buffers, FIFO for fairness
	notify   chan struct{}
	channels []*InputChannel
}

// NewInputGate returns an empty gate.
func NewInputGate() *InputGate { return &InputGate{notify: make(chan struct{}, 1)} }

// Notify is signalled (coalesced) whenever a buffer arrives.
func (g *InputGate) Notify() <-chan struct{} { return g.notify }

// Channels returns all channels of the gate in the order they were connected.
func (g *InputGate) Channels() []*InputChannel { return g.channels }

// Poll takes the next buffer from some ready channel, or returns ok=false if
// none has one.
func (g *InputGate) Poll() (c *InputChannel, b *Buffer, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.ready) == 0 {
		return nil, nil, false
	}
	c = g.ready[0]
	copy(g.ready, g.ready[1:])
	g.ready[len(g.ready)-1] = nil
	g.ready = g.ready[:len(g.ready)-1]
	b = c.queue[0]
	copy(c.queue, c.queue[1:])
	c.queue[len(c.queue)-1] = nil
	c.queue = c.queue[:len(c.queue)-1]
	if len(c.queue) > 0 {
		g.ready = append(g.ready, c)
	} else {
		c.enqueued = false
	}
	return c, b, true
}

// Connect links a producer subpartition to a new input channel of this gate
// and grants the producer initialCredits. It is the in-process transport.
func Connect(s *Subpartition, g *InputGate, input, channel, initialCredits int) *InputChannel {
	c := &InputChannel{gate: g, Input: input, Channel: channel, sender: s}
	s.receiver = c
	g.channels = append(g.channels, c)
	s.Grant(initialCredits)
	return c
}

// ResultPartition is a producer subtask's output on one edge: one subpartition
// per consuming channel, sharing one bounded buffer pool. The pool belongs to
// the producing side; consumers only connect to the subpartitions.
type ResultPartition struct {
	Pool *BufferPool
	Subs []*Subpartition
}

// NewResultPartition creates n subpartitions over pool (nil: set later by the producer).
func NewResultPartition(n int, pool *BufferPool) *ResultPartition {
	rp := &ResultPartition{Pool: pool, Subs: make([]*Subpartition, n)}
	for i := range rp.Subs {
		rp.Subs[i] = &Subpartition{}
	}
	return rp
}
