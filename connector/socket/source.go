package socket

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/operator"
)

// TextSource connects to Address and emits one record per line.
type TextSource struct {
	Address string
	// MaxLineBytes bounds one line (default 1 MiB); a longer line fails the source.
	MaxLineBytes int
}

// NewReader implements the source contract.
func (s TextSource) NewReader() operator.SourceReader[string] { return &reader{src: s} }

// reader receives lines on a helper goroutine (the socket read blocks) and
// hands them to the task goroutine in batches, never one send per line.
type reader struct {
	src  TextSource
	conn net.Conn

	mu      sync.Mutex // guards lines, err, done
	lines   []string
	err     error
	done    bool
	ready   chan struct{} // signalled when lines, err or done change
	space   chan struct{} // signalled when the task took lines
	spare   []string
	stopped chan struct{}
}

const maxPending = 4096 // lines buffered between the socket and the task

func (r *reader) Open(ctx *operator.Context) error {
	if ctx.Parallelism != 1 {
		return fmt.Errorf("socket source: needs parallelism 1, has %d", ctx.Parallelism)
	}
	conn, err := net.DialTimeout("tcp", r.src.Address, 10*time.Second)
	if err != nil {
		return fmt.Errorf("socket source: %w", err)
	}
	r.conn = conn
	r.ready = make(chan struct{}, 1)
	r.space = make(chan struct{}, 1)
	r.stopped = make(chan struct{})
	go r.receive()
	return nil
}

func (r *reader) receive() {
	defer close(r.stopped)
	max := r.src.MaxLineBytes
	if max <= 0 {
		max = 1 << 20
	}
	sc := bufio.NewScanner(r.conn)
	sc.Buffer(make([]byte, 64<<10), max)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		r.mu.Lock()
		for len(r.lines) >= maxPending && !r.done {
			r.mu.Unlock()
			<-r.space
			r.mu.Lock()
		}
		if r.done {
			r.mu.Unlock()
			return
		}
		r.lines = append(r.lines, line)
		r.mu.Unlock()
		signal(r.ready)
	}
	r.mu.Lock()
	if err := sc.Err(); err != nil && !r.done {
		r.err = fmt.Errorf("socket source: reading from %s: %w", r.src.Address, err)
	}
	r.done = true
	r.mu.Unlock()
	signal(r.ready)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (r *reader) Poll(out operator.Input[string]) (operator.Status, <-chan struct{}, int64, error) {
	r.mu.Lock()
	batch := r.lines
	r.lines = r.spare[:0]
	done, err := r.done, r.err
	r.mu.Unlock()
	signal(r.space)
	for i, l := range batch {
		out.ProcessElement(l, operator.NoTimestamp)
		batch[i] = ""
	}
	r.spare = batch[:0]
	switch {
	case err != nil:
		return 0, nil, 0, err
	case len(batch) > 0:
		return operator.MoreAvailable, nil, 0, nil
	case done:
		return operator.EndOfInput, nil, 0, nil
	}
	return operator.NothingAvailable, r.ready, 0, nil
}

func (r *reader) Close() error {
	if r.conn == nil {
		return nil
	}
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
	signal(r.space)
	err := r.conn.Close()
	<-r.stopped
	return err
}
