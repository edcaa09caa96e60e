package file

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bounds of what a stream holds between its input and the task.
const (
	maxPendingLines = 4096
	maxPendingBytes = 1 << 20
	streamBatch     = 256 // lines the reading goroutine hands over at once, at most
)

// bom is the UTF-8 byte order mark: at the start of an input it is not
// part of the first line.
const bom = "\ufeff"

// stream reads an input that cannot be seeked (standard input, a pipe, a FIFO,
// a device) on a goroutine of its own, since a read may block for as long as
// the writer likes, and hands its lines to the task goroutine in batches. It
// holds at most about maxPendingLines lines or maxPendingBytes bytes (plus
// one line), so memory stays bounded whatever the input's size, and the task
// stays free to run its mailbox and notice cancellation while it waits.
type stream struct {
	path string    // the file to open, "" when reading in
	in   io.Reader // standard input

	mu       sync.Mutex // guards the fields below
	lines    []string
	bytes    int
	finished bool // the input ended (err == nil) or failed
	err      error
	closed   bool     // close was called: stop reading
	f        *os.File // the opened input, once open

	ready   chan struct{} // signalled when lines becomes non-empty or finished is set
	space   chan struct{} // signalled when the task took lines, or on close
	stopped chan struct{} // closed when the goroutine returns
}

// startStream reads in, or else the file at path.
func startStream(path string, in io.Reader) *stream {
	s := &stream{in: in, ready: make(chan struct{}, 1), space: make(chan struct{}, 1), stopped: make(chan struct{})}
	if in == nil {
		s.path = path
	}
	go s.run()
	return s
}

func (s *stream) run() {
	defer close(s.stopped)
	in := s.in
	if in == nil {
		// Opening a FIFO waits until a writer opens it too.
		f, err := os.Open(s.path)
		if err != nil {
			s.finish(err)
			return
		}
		defer f.Close()
		s.mu.Lock()
		s.f = f
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		in = f
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var local []string
	for first := true; ; first = false {
		line, _, err := readLine(br)
		if first {
			line = strings.TrimPrefix(line, bom)
		}
		if err == nil || len(line) > 0 {
			local = append(local, line)
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			if s.push(local) {
				s.finish(err)
			}
			return
		}
		// Hand the lines over before a read that may block.
		if len(local) >= streamBatch || !hasLine(br) {
			if !s.push(local) {
				return
			}
			clear(local)
			local = local[:0]
		}
	}
}

// hasLine reports whether r holds a whole line, so reading it cannot block.
func hasLine(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// push appends lines to the pending ones, waiting while too many are
// pending; it reports false when the stream was closed.
func (s *stream) push(lines []string) bool {
	if len(lines) == 0 {
		return true
	}
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	s.mu.Lock()
	for (len(s.lines) >= maxPendingLines || s.bytes >= maxPendingBytes) && !s.closed {
		s.mu.Unlock()
		<-s.space
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return false
	}
	wasEmpty := len(s.lines) == 0
	s.lines = append(s.lines, lines...)
	s.bytes += n
	s.mu.Unlock()
	if wasEmpty {
		signal(s.ready)
	}
	return true
}

func (s *stream) finish(err error) {
	s.mu.Lock()
	s.finished = true
	if !s.closed {
		s.err = err
	}
	s.mu.Unlock()
	signal(s.ready)
}

// take returns the pending lines, handing spare over to hold the next ones;
// done is true once the input ended and every line was taken, err is set
// when reading failed.
func (s *stream) take(spare []string) (lines []string, done bool, err error) {
	s.mu.Lock()
	lines = s.lines
	s.lines, s.bytes = spare, 0
	done, err = s.finished && len(lines) == 0, s.err
	s.mu.Unlock()
	if len(lines) > 0 {
		signal(s.space)
	}
	return lines, done, err
}

// drained reports whether the input ended without an error and the task
// took every line.
func (s *stream) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished && s.err == nil && len(s.lines) == 0
}

// closeWait bounds how long close waits for a read or an open it tried to
// interrupt; after that the goroutine is left to end by itself.
const closeWait = 5 * time.Second

// close stops reading. A read of standard input cannot be interrupted: its
// goroutine is left to end when that read returns. Other inputs are closed,
// which ends a pending read of a pipe, FIFO or terminal; a FIFO still waiting
// for a writer in its open is woken by opening it for writing for a moment.
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	f, finished := s.f, s.finished
	s.mu.Unlock()
	signal(s.space)
	switch {
	case finished:
		<-s.stopped
		return
	case s.in != nil:
		return
	case f != nil:
		f.Close()
	}
	deadline := time.NewTimer(closeWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stopped:
			return
		case <-deadline.C:
			return
		case <-tick.C:
			if f == nil {
				wakeFIFOOpen(s.path)
			}
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
