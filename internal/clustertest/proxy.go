package clustertest

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection accepted on its address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cond     *sync.Cond // signalled when silent or closed changes
	silent   bool
	closed   bool
	minDelay time.Duration
	jitter   time.Duration
	rng      *rand.Rand
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
	bytes    atomic.Int64 // forwarded, both ways
}

// Bytes is how many bytes the proxy has forwarded, both ways together.
func (p *Proxy) Bytes() int64 { return p.bytes.Load() }

// NewProxy listens on a free loopback port and forwards to target
// (host:port). seed draws the delays' jitter.
func NewProxy(target string, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), conns: map[net.Conn]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay delays every chunk by min plus up to jitter more, drawn per
// chunk; chunks of one direction keep their order.
func (p *Proxy) SetDelay(min, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.minDelay, p.jitter = min, jitter
}

// Silence stops forwarding both ways without closing anything.
func (p *Proxy) Silence() { p.setSilent(true) }

// Heal forwards again what was held and what comes.
func (p *Proxy) Heal() { p.setSilent(false) }

func (p *Proxy) setSilent(s bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = s
	p.cond.Broadcast()
}

// Reset aborts every open connection with a TCP reset (SO_LINGER 0).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Linger 0 on every socket first: a pipe that sees its other side
	// closed closes this one too, and that close must be a reset as well.
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		p.wg.Add(3)
		var both sync.WaitGroup
		both.Add(2)
		go func() { defer both.Done(); p.pipe(in, out) }()
		go func() { defer both.Done(); p.pipe(out, in) }()
		go func() { // both directions ended: forget the pair
			defer p.wg.Done()
			both.Wait()
			in.Close()
			out.Close()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
		}()
	}
}

// chunk is bytes read at a time, to be written no sooner than at.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies from to to: a reader stamps each chunk with its release
// time (never before the previous one's, so the order holds), a writer
// waits for it and for the link not to be silent.
func (p *Proxy) pipe(from, to net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.at); d > 0 {
				time.Sleep(d)
			}
			if !p.waitAudible() {
				return
			}
			if _, err := to.Write(c.b); err != nil {
				return
			}
			p.bytes.Add(int64(len(c.b)))
		}
		if tc, ok := to.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	var last time.Time
	for {
		if !p.waitAudible() {
			break
		}
		b := make([]byte, 32<<10)
		n, err := from.Read(b)
		if n > 0 {
			at := time.Now().Add(p.delay())
			if at.Before(last) {
				at = last
			}
			last = at
			select {
			case q <- chunk{b: b[:n], at: at}:
			case <-done:
				from.Close()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				to.Close()
			}
			break
		}
	}
	close(q)
	<-done
}

// waitAudible waits while the link is silent; false once closed.
func (p *Proxy) waitAudible() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.silent && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}

func (p *Proxy) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.minDelay
	if p.jitter > 0 {
		d += time.Duration(p.rng.Int64N(int64(p.jitter)))
	}
	return d
}
