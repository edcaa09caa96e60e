package weir

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/sink"
)

// SinkHandle sets properties of a sink operator.
type SinkHandle struct{ n *graph.Node }

// Name sets the sink's name.
func (h SinkHandle) Name(name string) SinkHandle { h.n.Name = name; return h }

// UID sets the sink's stable ID.
func (h SinkHandle) UID(uid string) SinkHandle { h.n.UID = uid; return h }

// SetParallelism sets the sink's parallelism.
func (h SinkHandle) SetParallelism(p int) SinkHandle { h.n.Parallelism = p; return h }

// DisableChaining keeps the sink out of any chain.
func (h SinkHandle) DisableChaining() SinkHandle { h.n.ChainingDisabled = true; return h }

// SinkValidator is implemented by sinks that can check their configuration
// before the job runs (an output path that cannot be written, say): Execute
// calls Validate with the sink's parallelism and fails the job at once,
// before any work, when it returns an error.
type SinkValidator interface {
	Validate(parallelism int) error
}

// SinkTo adds a sink (see package sink) to the job. After a failure its
// output is at least once, unless the sink is idempotent; use
// SinkToCommitting for exactly-once output.
func SinkTo[T any](s DataStream[T], snk sink.Sink[T], name string) SinkHandle {
	n := addNode[T](s.env, "Sink: "+name, operator.NewSinkFactory(snk), true, s.ends)
	if v, ok := snk.(SinkValidator); ok {
		n.Validate = v.Validate
	}
	return SinkHandle{n}
}

// SinkToCommitting adds a two-phase-commit sink to the job: what it writes
// is committed when the checkpoint that covers it completes, so its output
// is exactly once after failures. Go cannot infer the committable type
// from the sink, so name both: SinkToCommitting[T, C](s, snk, name).
func SinkToCommitting[T, C any](s DataStream[T], snk sink.TwoPhaseCommitting[T, C], name string) SinkHandle {
	n := addNode[T](s.env, "Sink: "+name, operator.NewCommittingSinkFactory(snk), true, s.ends)
	if v, ok := snk.(SinkValidator); ok {
		n.Validate = v.Validate
	}
	return SinkHandle{n}
}

// Discard adds a sink that drops every element. It runs no user code, so it
// is an operator of its own rather than a SinkWriter: nothing per record.
func Discard[T any](s DataStream[T]) SinkHandle {
	fac := operator.FactoryFunc(func(ctx *operator.Context, _ any) (operator.Instance, error) {
		return operator.Instance{Op: noLifecycle{}, Inputs: []any{operator.Input[T](discardInput[T]{})}}, nil
	})
	return SinkHandle{addNode[T](s.env, "Sink: Discard", fac, true, s.ends)}
}

type discardInput[T any] struct{}

func (discardInput[T]) ProcessElement(T, int64) {}
func (discardInput[T]) ProcessWatermark(int64)  {}
func (discardInput[T]) ProcessBatch([]T, int64) {}

// WriteText writes one line per element, formatted by format (nil: fmt.Sprint).
// At parallelism 1 it writes the file path; otherwise path is a directory of
// part files, one per subtask. The output appears when the input ends; it
// is not exactly-once across restores (use WriteFiles with checkpoints).
func WriteText[T any](s DataStream[T], path string, format func(T) string) SinkHandle {
	return SinkTo[T](s, file.TextSink[T]{Path: path, Format: format}, path)
}

// WriteFiles writes one line per element into part files in the directory
// dir, exactly once across failures: a part rolls after 128 MiB or 60 s
// (file.Sink's rolling policy) and is committed when the checkpoint after
// its roll completes (without checkpoints, at the end of input). Readers
// that skip names starting with "." or "_" never see uncommitted data.
func WriteFiles[T any](s DataStream[T], dir string, format func(T) string) SinkHandle {
	return SinkToCommitting[T, file.Committable](s, file.Sink[T]{Dir: dir, Format: format}, dir)
}

// stdout is shared by all print sinks of the process.
var stdout = struct {
	sync.Mutex
	w io.Writer
}{w: os.Stdout}

// Print writes every element to standard output, prefixed with the subtask
// number ("2> ") when the sink runs at parallelism above 1, as Flink does.
func Print[T any](s DataStream[T]) SinkHandle {
	return SinkTo[T](s, printSink[T]{}, "Print to Std. Out")
}

type printSink[T any] struct{}

func (printSink[T]) CreateWriter(ctx sink.Context) (sink.Writer[T], error) {
	w := &printWriter[T]{}
	if ctx.Parallelism() > 1 {
		w.prefix = fmt.Sprintf("%d> ", ctx.Subtask()+1)
	}
	return w, nil
}

type printWriter[T any] struct {
	prefix string
}

func (w *printWriter[T]) Write(v T, _ int64) error {
	stdout.Lock()
	defer stdout.Unlock()
	_, err := fmt.Fprintf(stdout.w, "%s%v\n", w.prefix, v)
	return err
}

func (w *printWriter[T]) Flush(bool) error { return nil }
func (w *printWriter[T]) Close() error     { return nil }

// Collected gives the elements of a Collect sink back to the program.
//
// The sink does not wait for its reader until MaxUnread elements wait to be
// read, so a job ends even when the program reads its Collect sinks one
// after the other, or only after Execute returned. At that bound the sink
// waits for a reader that is in All (backpressure), and fails the job with
// an error naming MaxUnread when no All runs: a program reading another
// sink first would otherwise wait for ever.
type Collected[T any] struct {
	mu        sync.Mutex    // guards the fields below
	buf       [][]T         // batches not yet read, oldest first
	unread    int           // elements in buf
	maxUnread int           // bound on unread (MaxUnread)
	readers   int           // All loops running
	changed   chan struct{} // closed and replaced when buf, readers or ended change
	done      chan struct{} // closed when the run feeding buf has ended or failed to start
	ended     bool          // done is closed
}

// defaultCollectMaxUnread is how many elements a Collect sink holds for its
// reader before it waits for one (see Collected.MaxUnread).
const defaultCollectMaxUnread = 1 << 20

// collectSink is what ExecuteAsync tells a Collect sink: a run begins, and
// it has ended (or never started, when ExecuteAsync failed).
type collectSink interface {
	begin()
	end()
}

// begin readies the sink for a run: the first run keeps the done channel
// made by Collect, so that an All called before it waits for it; a later
// run of the same environment gets a new one.
func (c *Collected[T]) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		c.done, c.ended = make(chan struct{}), false
	}
}

func (c *Collected[T]) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		close(c.done)
		c.ended = true
		c.signal()
	}
}

// signal wakes everyone waiting for a change; c.mu is held.
func (c *Collected[T]) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Collect adds a sink whose elements the program reads with All, while the
// job runs or after it ended. The Collect sinks of a job may be read in any
// order, one after the other: each holds up to MaxUnread elements
// (1 Mi, 1<<20, unless set) for its reader. All may be called
// before or after the job starts: it returns once the job has ended (or
// failed to start) and every collected element was read. When the
// environment runs again, call All after ExecuteAsync: before it, All still
// speaks of the run that ended.
func Collect[T any](s DataStream[T]) *Collected[T] {
	c := &Collected[T]{maxUnread: defaultCollectMaxUnread, changed: make(chan struct{}), done: make(chan struct{})}
	s.env.collects = append(s.env.collects, c)
	SinkTo[T](s, collectFactory[T]{c}, "Collect")
	return c
}

// MaxUnread sets how many elements the sink holds for its reader (n >= 1;
// the default is 1 Mi, 1<<20). At that bound the sink waits
// while an All is reading it, and so backpressures the job; when no All
// runs, the job fails with an error naming MaxUnread. Set it before the job
// runs.
func (c *Collected[T]) MaxUnread(n int) *Collected[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxUnread = max(n, 1)
	return c
}

// All iterates over the collected elements until the job ends. Elements of
// one sink subtask arrive in order.
func (c *Collected[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		c.mu.Lock()
		done := c.done
		c.readers++
		c.signal()
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.readers--
			c.signal() // a writer waiting at the bound fails now
			c.mu.Unlock()
		}()
		for {
			// Checked before take: the run writes nothing after done closes.
			finished := isClosed(done)
			batch, changed := c.take()
			if batch == nil {
				if finished {
					return
				}
				select {
				case <-done:
				case <-changed:
				}
				continue
			}
			for i, v := range batch {
				if !yield(v) {
					c.putBack(batch[i+1:])
					return
				}
			}
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// take removes the oldest unread batch, or returns nil and a channel closed
// at the next change.
func (c *Collected[T]) take() ([]T, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) == 0 {
		return nil, c.changed
	}
	b := c.buf[0]
	c.buf[0] = nil
	c.buf = c.buf[1:]
	c.unread -= len(b)
	c.signal()
	return b, nil
}

// putBack returns the unread rest of a batch to the front, for the next All.
func (c *Collected[T]) putBack(rest []T) {
	if len(rest) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append([][]T{rest}, c.buf...)
	c.unread += len(rest)
	c.signal()
}

// put appends a batch, waiting at the bound while a reader is in All and
// failing the job when none is.
func (c *Collected[T]) put(batch []T, cancel <-chan struct{}) error {
	for {
		c.mu.Lock()
		if c.unread+len(batch) <= c.maxUnread || c.unread == 0 {
			c.buf = append(c.buf, batch)
			c.unread += len(batch)
			c.signal()
			c.mu.Unlock()
			return nil
		}
		if c.readers == 0 {
			n, bound := c.unread, c.maxUnread
			c.mu.Unlock()
			return failure.Permanent(fmt.Errorf("Collect sink: %d elements wait to be read, its bound (Collected.MaxUnread, default %d is %d here), "+
				"and no All is reading them: read each Collect sink in its own goroutine while the job runs, or raise MaxUnread", n, defaultCollectMaxUnread, bound))
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-cancel:
			return context.Canceled
		}
	}
}

type collectFactory[T any] struct{ c *Collected[T] }

func (f collectFactory[T]) CreateWriter(ctx sink.Context) (sink.Writer[T], error) {
	f.c.mu.Lock()
	size := min(collectBatch, f.c.maxUnread)
	f.c.mu.Unlock()
	return &collectWriter[T]{c: f.c, size: size, cancel: ctx.Canceled()}, nil
}

// collectWriter hands elements over in batches, never one lock per element.
type collectWriter[T any] struct {
	c      *Collected[T]
	batch  []T
	size   int // elements per batch: collectBatch, or MaxUnread if smaller
	cancel <-chan struct{}
}

const collectBatch = 256

func (w *collectWriter[T]) Write(v T, _ int64) error {
	w.batch = append(w.batch, v)
	if len(w.batch) >= w.size {
		return w.Flush(false)
	}
	return nil
}

// Flush hands over the pending batch; the task calls it on its buffer
// timeout so a slow stream is not held back.
func (w *collectWriter[T]) Flush(bool) error {
	if len(w.batch) == 0 {
		return nil
	}
	if err := w.c.put(w.batch, w.cancel); err != nil {
		return err
	}
	w.batch = make([]T, 0, w.size)
	return nil
}

func (w *collectWriter[T]) Close() error { return nil }

// ExecuteAndCollect runs the job and returns every element of s.
func ExecuteAndCollect[T any](ctx context.Context, env *Environment, s DataStream[T], name string) ([]T, error) {
	c := Collect(s)
	j, err := env.ExecuteAsync(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []T
	for v := range c.All() {
		out = append(out, v)
	}
	_, err = j.Wait(context.Background())
	return out, err
}
