package socket

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// TextSource connects to Address and emits one record per line, until the
// server closes the connection.
//
// Its one split goes to subtask 0; other subtasks end at once. It is not
// replayable: a checkpoint holds only the split, not a position, so after a
// restore the reader connects again and reads what the server sends from
// then on (what the failed attempt had read after the checkpoint is not
// read again, and nothing earlier is).
type TextSource struct {
	Address string
	// MaxLineBytes bounds one line (default 1 MiB); a longer line fails the source.
	MaxLineBytes int
}

// Split is the connection to read: the server's address.
type Split struct{ Address string }

// Boundedness implements source.Source: the server may send forever.
func (s TextSource) Boundedness() source.Boundedness { return source.Unbounded }

// SplitCodec implements source.Source.
func (s TextSource) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s TextSource) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	e := &enumerator{ctx: ctx, left: []Split{{Address: s.Address}}}
	if restored != nil {
		if len(restored) != 2 || restored[0] != formatVersion || restored[1] > 1 {
			return nil, fmt.Errorf("socket source: corrupt enumerator state %x", restored)
		}
		if restored[1] == 0 {
			e.left = nil
		}
	}
	return e, nil
}

// CreateReader implements source.Source.
func (s TextSource) CreateReader(ctx source.ReaderContext) (source.Reader[string, Split], error) {
	max := s.MaxLineBytes
	if max <= 0 {
		max = 1 << 20
	}
	return &reader{maxLine: max, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}, nil
}

// enumerator assigns the split to subtask 0 when it registers; every
// subtask then learns that no more splits will come.
type enumerator struct {
	ctx  source.EnumeratorContext[Split]
	left []Split // the split, until assigned
}

func (e *enumerator) Start() error { return nil }

func (e *enumerator) AddReader(i int) error {
	if i == 0 && len(e.left) > 0 {
		e.ctx.Assign(0, e.left...)
		e.left = nil
	}
	e.ctx.NoMoreSplits(i)
	return nil
}

func (e *enumerator) HandleSplitRequest(int) error { return nil }

// Snapshot records whether the split is still to be assigned.
func (e *enumerator) Snapshot(int64) ([]byte, error) {
	return []byte{formatVersion, byte(len(e.left))}, nil
}

func (e *enumerator) Close() error { return nil }

// reader receives lines on a helper goroutine (connecting and reading
// block) and hands them to the task goroutine in batches, never one send
// per line.
type reader struct {
	maxLine int
	split   *Split // the split being read, nil without one
	noMore  bool
	batch   []string // lines taken from lines; batch[taken:] are not emitted yet
	taken   int

	mu      sync.Mutex // guards the fields below
	conn    net.Conn
	lines   []string
	err     error
	done    bool // the connection ended, or the reader closed
	ready   chan struct{}
	space   chan struct{} // signalled when the task took lines
	spare   []string
	cancel  context.CancelFunc
	stopped chan struct{} // closed when the goroutine returns
}

const maxPending = 4096 // lines buffered between the socket and the task

func (r *reader) Start() error { return nil }

// AddSplits starts reading the split: it connects on the helper goroutine.
func (r *reader) AddSplits(splits []Split) {
	for _, sp := range splits {
		if r.split != nil {
			continue // one connection per source
		}
		r.split = &sp
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.stopped = make(chan struct{})
		go r.receive(ctx, sp.Address)
	}
	signal(r.ready)
}

func (r *reader) NoMoreSplits() {
	r.noMore = true
	signal(r.ready)
}

func (r *reader) receive(ctx context.Context, address string) {
	defer close(r.stopped)
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", address)
	r.mu.Lock()
	if err != nil || r.done {
		if err != nil && !r.done {
			r.err = fmt.Errorf("socket source: %w", err)
		}
		r.done = true
		r.mu.Unlock()
		if conn != nil {
			conn.Close()
		}
		signal(r.ready)
		return
	}
	r.conn = conn
	r.mu.Unlock()
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), r.maxLine)
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
		r.err = fmt.Errorf("socket source: reading from %s: %w", address, err)
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

func (r *reader) PollNext(out source.Output[string]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.split == nil {
		if r.noMore {
			return source.EndOfInput, nil, 0, nil
		}
		return source.NothingAvailable, r.ready, 0, nil
	}
	var done bool
	var err error
	if r.taken == len(r.batch) {
		// done and err are read with the lines: they hold after them.
		r.mu.Lock()
		r.spare, r.batch, r.lines = r.batch[:0], r.lines, r.spare[:0]
		r.taken = 0
		done, err = r.done, r.err
		r.mu.Unlock()
		signal(r.space)
	}
	for r.taken < len(r.batch) {
		out.Collect(r.batch[r.taken])
		r.batch[r.taken] = ""
		r.taken++
		if out.ShouldYield() {
			break
		}
	}
	if r.taken > 0 {
		// Lines were emitted (the rest of the batch, if any, comes next).
		if r.taken == len(r.batch) {
			r.batch, r.taken = r.batch[:0], 0
		}
		return source.MoreAvailable, nil, 0, nil
	}
	switch {
	case err != nil:
		return 0, nil, 0, err
	case done:
		return source.EndOfInput, nil, 0, nil
	}
	return source.NothingAvailable, r.ready, 0, nil
}

// SnapshotState returns the split while the connection is being read: a
// restored reader connects again.
func (r *reader) SnapshotState(int64) ([]Split, error) {
	if r.split == nil {
		return nil, nil
	}
	r.mu.Lock()
	finished := r.done && r.err == nil && len(r.lines) == 0
	r.mu.Unlock()
	if finished {
		return nil, nil
	}
	return []Split{*r.split}, nil
}

func (r *reader) NotifyCheckpointComplete(int64) error { return nil }

func (r *reader) Close() error {
	if r.split == nil {
		return nil
	}
	r.mu.Lock()
	r.done = true
	conn := r.conn
	r.mu.Unlock()
	r.cancel()
	signal(r.space)
	var err error
	if conn != nil {
		err = conn.Close()
	}
	<-r.stopped
	return err
}

// formatVersion is the first byte of the encodings stored in checkpoints.
const formatVersion = 1

// splitCodec encodes a Split as the version byte and the address (uvarint
// length and bytes).
type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s Split) []byte {
	dst = append(dst, formatVersion)
	dst = binary.AppendUvarint(dst, uint64(len(s.Address)))
	return append(dst, s.Address...)
}

func (splitCodec) Decode(src []byte) (Split, int, error) {
	if len(src) == 0 {
		return Split{}, 0, codec.ErrTruncated
	}
	if src[0] != formatVersion {
		return Split{}, 0, fmt.Errorf("%w: socket split version %d, want %d", codec.ErrCorrupt, src[0], formatVersion)
	}
	l, k := binary.Uvarint(src[1:])
	switch {
	case k == 0:
		return Split{}, 0, codec.ErrTruncated
	case k < 0:
		return Split{}, 0, fmt.Errorf("%w: varint overflows 64 bits", codec.ErrCorrupt)
	case l > uint64(len(src)-1-k):
		return Split{}, 0, codec.ErrTruncated
	}
	n := 1 + k + int(l)
	return Split{Address: string(src[1+k : n])}, n, nil
}

var _ source.Source[string, Split] = TextSource{}
