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

// AddPriority hands the event b to the receiver ahead of everything not
// yet consumed, credit or not (an unaligned checkpoint's barrier). It
// returns copies of the data buffers it overtook in the backlog, in order:
// they are still delivered after it, and the caller stores the copies as
// channel state. (The receiver counts the ones it overtook in its queue.)
func (s *Subpartition) AddPriority(b *Buffer) (overtaken [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	over, now := s.ledger.addPriority(b)
	for _, o := range over {
		// Copied under the lock: once delivered, the consumer recycles them.
		overtaken = append(overtaken, append([]byte(nil), o.Data...))
	}
	if now {
		if b.priority {
			s.receiver.deliverPriority(b)
		} else {
			s.receiver.deliver(b)
		}
	}
	return overtaken
}

// Grant gives the producer n more credits (free receiver slots) and delivers
// whatever backlog they allow.
func (s *Subpartition) Grant(n int) {
	s.mu.Lock()
	s.scratch = s.ledger.grant(n, s.scratch)
	for i, b := range s.scratch {
		if b.priority {
			s.receiver.deliverPriority(b)
		} else {
			s.receiver.deliver(b)
		}
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
	// Index is the channel's position among all channels of the gate, used
	// for barrier alignment.
	Input, Channel, Index int
	sender                *Subpartition // where credits go (local transport)

	// guarded by gate.mu
	queue    []*Buffer
	prio     int  // priority events at the head of queue
	enqueued bool // in gate.ready
	blocked  bool // left out of polling (barrier alignment), priority events too
}

// ReturnCredit gives one slot back to the producer after the consumer is done
// with a data buffer of this channel (events cost no credit).
func (c *InputChannel) ReturnCredit() { c.sender.Grant(1) }

// deliver queues b. A watermark right behind another queued watermark
// replaces it, so a consumer that does not read cannot pile up events.
func (c *InputChannel) deliver(b *Buffer) {
	g := c.gate
	g.mu.Lock()
	if n := len(c.queue); b.Kind == KindWatermark && n > c.prio && c.queue[n-1].Kind == KindWatermark {
		c.queue[n-1] = b
		g.mu.Unlock()
		return
	}
	c.queue = append(c.queue, b)
	g.makeReadyLocked(c)
	g.mu.Unlock()
	g.signal()
}

// deliverPriority puts the event b ahead of every buffer queued in the
// channel (behind earlier priority events), and records in it how many data
// buffers it overtook: those came before it in the channel's order, so an
// unaligned checkpoint stores them as channel state.
func (c *InputChannel) deliverPriority(b *Buffer) {
	g := c.gate
	g.mu.Lock()
	if endsData(c.queue[c.prio:]) {
		// Nothing to overtake after the end of data; keep the order.
		b.priority = false
		g.mu.Unlock()
		c.deliver(b)
		return
	}
	overtaken := 0
	for _, q := range c.queue[c.prio:] {
		if !q.IsEvent() {
			overtaken++
		}
	}
	b.Overtaken = overtaken
	c.queue = append(c.queue, nil)
	copy(c.queue[c.prio+1:], c.queue[c.prio:])
	c.queue[c.prio] = b
	c.prio++
	if c.prio == 1 {
		g.priority = append(g.priority, c)
	}
	g.mu.Unlock()
	g.signal()
}

// InputGate collects the input channels of one subtask, over all its inputs.
// The subtask's goroutine polls it; producers wake it through Notify.
type InputGate struct {
	mu       sync.Mutex      // guards ready, priority and every channel's queue, prio, enqueued, blocked
	ready    []*InputChannel // unblocked channels with queued buffers, FIFO for fairness
	priority []*InputChannel // channels with a priority event at their head, FIFO
	notify   chan struct{}
	channels []*InputChannel
}

// NewInputGate returns an empty gate.
func NewInputGate() *InputGate { return &InputGate{notify: make(chan struct{}, 1)} }

func (g *InputGate) signal() {
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

func (g *InputGate) makeReadyLocked(c *InputChannel) {
	if !c.enqueued && !c.blocked && len(c.queue) > c.prio {
		c.enqueued = true
		g.ready = append(g.ready, c)
	}
}

// Notify is signalled (coalesced) whenever a buffer arrives.
func (g *InputGate) Notify() <-chan struct{} { return g.notify }

// Channels returns all channels of the gate in the order they were connected.
func (g *InputGate) Channels() []*InputChannel { return g.channels }

// Poll takes the next buffer: a priority event if an unblocked channel has
// one, else the head of the next ready (unblocked) channel. ok is false if
// there is none.
func (g *InputGate) Poll() (c *InputChannel, b *Buffer, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, pc := range g.priority {
		if pc.blocked {
			continue // a blocked channel's priority events wait too
		}
		c = pc
		g.priority = append(g.priority[:i], g.priority[i+1:]...)
		b = c.popLocked()
		c.prio--
		if c.prio > 0 {
			g.priority = append(g.priority, c)
		}
		return c, b, true
	}
	if len(g.ready) == 0 {
		return nil, nil, false
	}
	c = g.ready[0]
	g.ready = removeFirst(g.ready)
	b = c.popLocked()
	c.enqueued = false
	g.makeReadyLocked(c)
	return c, b, true
}

func (c *InputChannel) popLocked() *Buffer {
	b := c.queue[0]
	copy(c.queue, c.queue[1:])
	c.queue[len(c.queue)-1] = nil
	c.queue = c.queue[:len(c.queue)-1]
	return b
}

func removeFirst(s []*InputChannel) []*InputChannel {
	copy(s, s[1:])
	s[len(s)-1] = nil
	return s[:len(s)-1]
}

// Block leaves the channel out of Poll (its buffers and events, priority
// ones too, wait in it) until Unblock. Barrier alignment uses it.
func (g *InputGate) Block(c *InputChannel) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.blocked {
		return
	}
	c.blocked = true
	if c.enqueued {
		for i, r := range g.ready {
			if r == c {
				g.ready = append(g.ready[:i], g.ready[i+1:]...)
				break
			}
		}
		c.enqueued = false
	}
}

// Unblock puts a blocked channel back into polling.
func (g *InputGate) Unblock(c *InputChannel) {
	g.mu.Lock()
	c.blocked = false
	g.makeReadyLocked(c)
	g.mu.Unlock()
	g.signal()
}

// Queued returns the number of buffers queued in the channel (for tests and metrics).
func (c *InputChannel) Queued() int {
	c.gate.mu.Lock()
	defer c.gate.mu.Unlock()
	return len(c.queue)
}

// Connect links a producer subpartition to a new input channel of this gate
// and grants the producer initialCredits. It is the in-process transport.
func Connect(s *Subpartition, g *InputGate, input, channel, initialCredits int) *InputChannel {
	c := &InputChannel{gate: g, Input: input, Channel: channel, Index: len(g.channels), sender: s}
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
