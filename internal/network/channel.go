package network

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Subpartition is the producing end of one channel: the part of a producer's
// output that goes to one consumer subtask.
type Subpartition struct {
	mu       sync.Mutex // guards ledger and scratch; held while delivering, so deliveries stay in order
	ledger   ledger
	scratch  []*Buffer
	receiver Receiver
}

// Receiver is where a Subpartition hands its buffers: the InputChannel it
// was connected to in this process (Connect), or a transport that carries
// them to another process (internal/network/tcp). Both methods run with
// the subpartition's lock held, in the channel's order, and must not block.
type Receiver interface {
	// Deliver takes b, in order; it now owns b.
	Deliver(b *Buffer)
	// DeliverPriority takes the event b ahead of what it has not yet
	// handed on (an unaligned barrier).
	DeliverPriority(b *Buffer)
}

// Sender is where an InputChannel's credits go: its Subpartition in this
// process, or a transport that carries them to another.
type Sender interface {
	// Grant gives the producer n more credits (free receiver slots).
	Grant(n int)
}

// Add hands a finished buffer or an event to the channel. It never blocks:
// without credit the buffer waits in the backlog, which the producer's
// bounded pool limits (events in the backlog are bounded by its data, see
// ledger).
func (s *Subpartition) Add(b *Buffer) {
	s.mu.Lock()
	now, replaced := s.ledger.add(b)
	if now {
		s.send(b)
	}
	s.mu.Unlock()
	for _, r := range replaced {
		r.Recycle()
	}
}

// AddPriority hands the event b to the receiver ahead of everything not
// yet consumed, credit or not (an unaligned checkpoint's barrier). It
// returns copies of the data buffers it overtook in the backlog, with the
// watermarks and statuses among them (InFlight), in order:
// they are still delivered after it, and the caller stores the copies as
// channel state. (The receiver counts the ones it overtook in its queue.)
func (s *Subpartition) AddPriority(b *Buffer) (overtaken []InFlight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	over, now := s.ledger.addPriority(b)
	for _, o := range over {
		// Copied under the lock: once delivered, the consumer recycles them.
		overtaken = append(overtaken, InFlight{Kind: o.Kind, Data: append([]byte(nil), o.Data...)})
	}
	if now {
		s.send(b)
	}
	return overtaken
}

// PromoteBarrier turns the aligned barrier of checkpoint id, if it still
// waits for credit here, into an unaligned one that goes ahead of the data
// (Flink's aligned-checkpoint timeout on the output side). It returns
// copies of the data buffers (and watermarks, statuses) it overtook, in
// order, which are still
// delivered after it: keep gets them before the barrier goes (and runs
// its onSent hook), to store them as channel state.
func (s *Subpartition) PromoteBarrier(id int64, keep func(overtaken []InFlight)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, over, now := s.ledger.promote(id)
	if b == nil {
		return false
	}
	var overtaken []InFlight
	for _, o := range over {
		overtaken = append(overtaken, InFlight{Kind: o.Kind, Data: append([]byte(nil), o.Data...)})
	}
	keep(overtaken)
	if now {
		s.send(b)
	}
	return true
}

// send hands b to the receiver (s.mu held), then runs its onSent hook.
func (s *Subpartition) send(b *Buffer) {
	f := b.onSent
	b.onSent = nil
	if b.priority {
		s.receiver.DeliverPriority(b)
	} else {
		s.receiver.Deliver(b)
	}
	if f != nil {
		f()
	}
}

// Grant gives the producer n more credits (free receiver slots) and delivers
// whatever backlog they allow.
func (s *Subpartition) Grant(n int) {
	s.mu.Lock()
	s.scratch = s.ledger.grant(n, s.scratch)
	for i, b := range s.scratch {
		s.send(b)
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
	sender                Sender // where credits go: the Subpartition (local) or a transport

	// guarded by gate.mu
	queue    []*Buffer
	prio     int  // priority events at the head of queue
	enqueued bool // in gate.ready
	blocked  bool // left out of polling (barrier alignment), priority events too
}

// ReturnCredit gives one slot back to the producer after the consumer is done
// with a data buffer of this channel (events cost no credit).
func (c *InputChannel) ReturnCredit() { c.sender.Grant(1) }

// Deliver queues b. Watermarks and statuses right behind queued ones
// coalesce (coalesceProgress), so a consumer that does not read cannot pile
// up events.
func (c *InputChannel) Deliver(b *Buffer) {
	g := c.gate
	g.mu.Lock()
	if n := len(c.queue); b.isProgress() && n > c.prio && c.queue[n-1].isProgress() {
		c.queue, _ = coalesceProgress(c.queue, c.prio, b)
		g.mu.Unlock()
		return
	}
	// Read before b is handed over: the consumer may recycle it at once.
	var announce func(Barrier)
	var br Barrier
	if b.Kind == KindBarrier && g.announce != nil {
		announce, br = g.announce, b.Barrier()
	}
	c.queue = append(c.queue, b)
	g.makeReadyLocked(c)
	g.mu.Unlock()
	g.signal()
	if announce != nil {
		announce(br)
	}
}

// DeliverPriority puts the event b ahead of every buffer queued in the
// channel (behind earlier priority events), and records in it how many
// data buffers, watermarks and statuses it overtook: those came before it
// in the channel's order, so an unaligned checkpoint stores them as
// channel state. A transport's buffer becomes a priority event here.
func (c *InputChannel) DeliverPriority(b *Buffer) {
	b.priority = true
	g := c.gate
	g.mu.Lock()
	overtaken := 0
	for _, q := range c.queue[c.prio:] {
		if q.IsChannelState() {
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
	g.signalPriority()
	g.signal()
}

// InputGate collects the input channels of one subtask, over all its inputs.
// The subtask's goroutine polls it; producers wake it through Notify.
type InputGate struct {
	mu       sync.Mutex      // guards ready, priority and every channel's queue, prio, enqueued, blocked
	ready    []*InputChannel // unblocked channels with queued buffers, FIFO for fairness
	priority []*InputChannel // channels with a priority event at their head, FIFO
	notify   chan struct{}
	// prioNotify is signalled when a priority event arrives; interrupt, if
	// set, is set then too, so a consumer in the middle of a buffer stops at
	// the next record to take it.
	prioNotify chan struct{}
	interrupt  atomic.Pointer[atomic.Bool]
	channels   []*InputChannel
	// announce, if set, learns of every barrier queued behind data (the
	// consumer may not reach it before its aligned timeout).
	announce func(Barrier)
}

// SetAnnounce makes the gate call f, on the delivering goroutine, with each
// barrier queued in order (not as a priority event).
func (g *InputGate) SetAnnounce(f func(Barrier)) {
	g.mu.Lock()
	g.announce = f
	g.mu.Unlock()
}

// PromoteBarrier turns the aligned barriers of checkpoint id queued behind
// data in the gate's channels into unaligned priority events (each
// recording the data buffers it overtook), and reports how many it turned.
func (g *InputGate) PromoteBarrier(id int64) int {
	g.mu.Lock()
	n := 0
	for _, c := range g.channels {
		if c.promoteLocked(id) {
			n++
		}
	}
	g.mu.Unlock()
	if n > 0 {
		g.signalPriority()
		g.signal()
	}
	return n
}

// PromoteBarrier is InputGate.PromoteBarrier for channel c alone.
func (c *InputChannel) PromoteBarrier(id int64) bool {
	g := c.gate
	g.mu.Lock()
	ok := c.promoteLocked(id)
	g.mu.Unlock()
	if ok {
		g.signalPriority()
		g.signal()
	}
	return ok
}

// promoteLocked moves the aligned barrier of checkpoint id, if queued in c,
// to the head of the queue as an unaligned priority event (g.mu held).
func (c *InputChannel) promoteLocked(id int64) bool {
	i := slices.IndexFunc(c.queue[c.prio:], func(q *Buffer) bool { return q.isAlignedBarrier(id) })
	if i < 0 {
		return false
	}
	i += c.prio
	b := c.queue[i]
	b.promoteBarrier()
	b.priority = true
	b.Overtaken = 0
	for _, q := range c.queue[c.prio:i] {
		if q.IsChannelState() {
			b.Overtaken++
		}
	}
	copy(c.queue[c.prio+1:i+1], c.queue[c.prio:i])
	c.queue[c.prio] = b
	c.prio++
	if c.prio == 1 {
		c.gate.priority = append(c.gate.priority, c)
	}
	if len(c.queue) == c.prio {
		// Only priority events are left: the channel is no longer ready.
		c.gate.unreadyLocked(c)
	}
	return true
}

// NewInputGate returns an empty gate.
func NewInputGate() *InputGate {
	return &InputGate{notify: make(chan struct{}, 1), prioNotify: make(chan struct{}, 1)}
}

// SetInterrupt makes every priority event set f.
func (g *InputGate) SetInterrupt(f *atomic.Bool) { g.interrupt.Store(f) }

// PriorityNotify is signalled (coalesced) when a priority event arrives or
// a channel holding one is unblocked.
func (g *InputGate) PriorityNotify() <-chan struct{} { return g.prioNotify }

func (g *InputGate) signalPriority() {
	if f := g.interrupt.Load(); f != nil {
		f.Store(true)
	}
	select {
	case g.prioNotify <- struct{}{}:
	default:
	}
}

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
	if c, b, ok = g.pollPriorityLocked(); ok {
		return c, b, ok
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

// PollPriority takes the next priority event of an unblocked channel, if
// any: what a consumer may take while it is in the middle of a buffer or
// its outputs are full.
func (g *InputGate) PollPriority() (c *InputChannel, b *Buffer, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pollPriorityLocked()
}

func (g *InputGate) pollPriorityLocked() (c *InputChannel, b *Buffer, ok bool) {
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
	return nil, nil, false
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
	g.unreadyLocked(c)
}

// unreadyLocked takes c out of the ready list.
func (g *InputGate) unreadyLocked(c *InputChannel) {
	if !c.enqueued {
		return
	}
	for i, r := range g.ready {
		if r == c {
			g.ready = append(g.ready[:i], g.ready[i+1:]...)
			break
		}
	}
	c.enqueued = false
}

// Unblock puts a blocked channel back into polling.
func (g *InputGate) Unblock(c *InputChannel) {
	g.mu.Lock()
	c.blocked = false
	g.makeReadyLocked(c)
	prio := c.prio > 0
	g.mu.Unlock()
	if prio {
		g.signalPriority()
	}
	g.signal()
}

// QueuedBuffers returns the channel's queue, in the order Poll would take
// it: first its prio priority events, then the rest. The buffers stay
// queued; only the consumer, which takes and recycles them, may read them.
func (c *InputChannel) QueuedBuffers() (queue []*Buffer, prio int) {
	c.gate.mu.Lock()
	defer c.gate.mu.Unlock()
	return append([]*Buffer(nil), c.queue...), c.prio
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
	c := g.AddChannel(input, channel, s)
	s.receiver = c
	s.Grant(initialCredits)
	return c
}

// AddChannel adds an input channel to the gate whose credits go to
// sender: for a transport, whose buffers arrive through the channel's
// Deliver. Like Connect, it is called while the gate is set up, before
// the gate is polled.
func (g *InputGate) AddChannel(input, channel int, sender Sender) *InputChannel {
	c := &InputChannel{gate: g, Input: input, Channel: channel, Index: len(g.channels), sender: sender}
	g.channels = append(g.channels, c)
	return c
}

// Attach makes r the subpartition's receiver and grants it initialCredits
// (a transport's remote input channel; Connect does this for a local
// one). A subpartition has one receiver: attach it once, before any grant.
func (s *Subpartition) Attach(r Receiver, initialCredits int) {
	s.mu.Lock()
	s.receiver = r
	s.mu.Unlock()
	s.Grant(initialCredits)
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
