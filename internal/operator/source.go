package operator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/state"
)

// Events between a source reader and its enumerator's coordinator. Each
// payload is one type byte, then for splitsAssigned a uvarint count and
// the encoded splits (uvarint length + bytes).
const (
	eventReaderRegistered byte = 'R' // reader -> coordinator
	eventSplitRequest     byte = 'Q' // reader -> coordinator
	eventSplitsAssigned   byte = 'A' // coordinator -> reader
	eventNoMoreSplits     byte = 'N' // coordinator -> reader
)

// splitsState is the operator list state holding a source reader's splits.
const splitsState = "source-reader-splits"

// SourceOperator runs a source.Reader as the head of a chain: the task polls
// it, and it keeps the reader's splits in operator state at barriers.
type SourceOperator[T, S any] struct {
	reader source.Reader[T, S]
	codec  codec.Codec[S]
	out    sourceOutput[T]
	ctx    *Context
	splits state.ListState[[]byte]
	ended  bool
	buf    []byte
}

type sourceOutput[T any] struct {
	in    Input[T]
	batch BatchInput[T] // in, when it takes batches
	yield *atomic.Bool
}

func newSourceOutput[T any](in Input[T], yield *atomic.Bool) sourceOutput[T] {
	return sourceOutput[T]{in: in, batch: AsBatch(in), yield: yield}
}

func (o *sourceOutput[T]) Collect(v T)                        { o.in.ProcessElement(v, NoTimestamp) }
func (o *sourceOutput[T]) CollectWithTimestamp(v T, ts int64) { o.in.ProcessElement(v, ts) }
func (o *sourceOutput[T]) ShouldYield() bool                  { return o.yield != nil && o.yield.Load() }

// ForSplit implements source.Output: without a strategy a split's records
// go straight out, through this output itself (no wrapper: a reader's
// batches cost the same call as without splits).
func (o *sourceOutput[T]) ForSplit(string) source.SplitOutput[T] { return o }

// ReleaseSplit implements source.Output.
func (o *sourceOutput[T]) ReleaseSplit(string) {}

// EmitWatermark and MarkIdle implement source.SplitOutput: without a
// strategy the source has no watermarks of its own.
func (o *sourceOutput[T]) EmitWatermark(int64) {}
func (o *sourceOutput[T]) MarkIdle()           {}

func (o *sourceOutput[T]) CollectBatch(vs []T) {
	if o.batch != nil {
		if len(vs) > 0 {
			o.batch.ProcessBatch(vs, NoTimestamp)
		}
		return
	}
	in := o.in
	for _, v := range vs {
		in.ProcessElement(v, NoTimestamp)
	}
}

// readerContext implements source.ReaderContext.
type readerContext struct{ ctx *Context }

func (r readerContext) Subtask() int       { return r.ctx.Subtask }
func (r readerContext) Parallelism() int   { return r.ctx.Parallelism }
func (r readerContext) Clock() clock.Clock { return r.ctx.Clock }
func (r readerContext) RequestSplit()      { r.ctx.SendEvent([]byte{eventSplitRequest}) }

// Metrics gives the reader counters and gauges on the operator's metrics
// (see source.ReaderMetrics).
func (r readerContext) Metrics() source.Metrics { return readerMetrics{r.ctx} }

type readerMetrics struct{ ctx *Context }

func (m readerMetrics) Counter(name string) source.Counter { return m.ctx.Counter(name) }
func (m readerMetrics) Gauge(name string) source.Gauge     { return m.ctx.Counter(name) }

// NewSourceFactory returns the factory of a source's operator and the
// factory of its coordinator (the enumerator on the JobManager).
func NewSourceFactory[T, S any](src source.Source[T, S]) (Factory, opcoordinator.Factory) {
	op := FactoryFunc(func(ctx *Context, out any) (Instance, error) {
		r, err := src.CreateReader(readerContext{ctx})
		if err != nil {
			return Instance{}, err
		}
		op := &SourceOperator[T, S]{reader: r, codec: src.SplitCodec(), out: newSourceOutput(out.(Input[T]), ctx.Yield), ctx: ctx}
		return Instance{Op: op, Source: op}, nil
	})
	return op, coordinatorFactory[T, S]{src: src}
}

// InitializeState implements StateInitializer: restored splits go back to
// the reader before it starts.
func (s *SourceOperator[T, S]) InitializeState(restored bool) error {
	s.splits = state.GetOperatorListState(s.ctx.OperatorState(), state.ListDescriptor[[]byte]{Name: splitsState, Codec: codec.Bytes()})
	if !restored {
		return nil
	}
	var splits []S
	for _, enc := range s.splits.Get() {
		sp, _, err := s.codec.Decode(enc)
		if err != nil {
			return fmt.Errorf("restoring a source split: %w", err)
		}
		splits = append(splits, sp)
	}
	if len(splits) > 0 {
		s.reader.AddSplits(splits)
	}
	return nil
}

// Open implements Lifecycle: the reader starts and registers with its enumerator.
func (s *SourceOperator[T, S]) Open(*Context) error {
	if err := s.reader.Start(); err != nil {
		return err
	}
	s.ctx.SendEvent([]byte{eventReaderRegistered})
	return nil
}

// Finish implements Lifecycle.
func (s *SourceOperator[T, S]) Finish() error { return nil }

// Close implements Lifecycle.
func (s *SourceOperator[T, S]) Close() error { return s.reader.Close() }

// SnapshotState implements Snapshotter: the reader's splits with their
// positions replace the previous ones in operator state.
func (s *SourceOperator[T, S]) SnapshotState(id int64) error {
	splits, err := s.reader.SnapshotState(id)
	if err != nil {
		return err
	}
	enc := make([][]byte, len(splits))
	for i, sp := range splits {
		enc[i] = s.codec.AppendEncode(nil, sp)
	}
	s.splits.Update(enc)
	return nil
}

// NotifyCheckpointComplete implements CheckpointListener.
func (s *SourceOperator[T, S]) NotifyCheckpointComplete(id int64) error {
	return s.reader.NotifyCheckpointComplete(id)
}

// NotifyCheckpointAborted implements CheckpointListener.
func (s *SourceOperator[T, S]) NotifyCheckpointAborted(int64) {}

// HandleOperatorEvent implements EventHandler: split assignments.
func (s *SourceOperator[T, S]) HandleOperatorEvent(p []byte) error {
	if len(p) == 0 {
		return errors.New("source: empty event from the enumerator")
	}
	switch p[0] {
	case eventNoMoreSplits:
		s.reader.NoMoreSplits()
		return nil
	case eventSplitsAssigned:
		encs, err := decodeSplitList(p[1:])
		if err != nil {
			return err
		}
		splits := make([]S, len(encs))
		for i, e := range encs {
			if splits[i], _, err = s.codec.Decode(e); err != nil {
				return fmt.Errorf("source: decoding an assigned split: %w", err)
			}
		}
		s.reader.AddSplits(splits)
		return nil
	}
	return fmt.Errorf("source: unknown event %q from the enumerator", p[0])
}

// Drainer is implemented by sources that can send the maximum watermark
// without ending (stop with savepoint and --drain).
type Drainer interface{ EmitMaxWatermark() }

// EmitMaxWatermark implements Drainer: the maximum watermark, as at the end
// of input, so every event-time timer downstream fires. The source is not
// polled afterwards (the task stops it).
func (s *SourceOperator[T, S]) EmitMaxWatermark() {
	if s.ended {
		return
	}
	s.ctx.SetIdle(false)
	s.ctx.Enter()
	s.out.in.ProcessWatermark(MaxWatermark)
}

// PollNext implements Source. At the end of input it emits the maximum
// watermark, so every event-time timer downstream fires.
func (s *SourceOperator[T, S]) PollNext() (Status, <-chan struct{}, int64, error) {
	return s.pollWith(&s.out)
}

func (s *SourceOperator[T, S]) pollWith(out source.Output[T]) (Status, <-chan struct{}, int64, error) {
	st, wake, retry, err := s.reader.PollNext(out)
	if err != nil {
		return 0, nil, 0, err
	}
	switch st {
	case source.EndOfInput:
		if !s.ended {
			s.ended = true
			s.ctx.SetIdle(false) // active again for the final watermark
			s.ctx.Enter()
			s.out.in.ProcessWatermark(MaxWatermark)
		}
		return EndOfInput, nil, 0, nil
	case source.NothingAvailable:
		ms := int64(0)
		if retry > 0 {
			ms = max(int64((retry+time.Millisecond-1)/time.Millisecond), 1)
		}
		return NothingAvailable, wake, ms, nil
	}
	return MoreAvailable, nil, 0, nil
}

func decodeSplitList(p []byte) ([][]byte, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, errors.New("source: corrupt split assignment")
	}
	p = p[k:]
	out := make([][]byte, 0, n)
	for range n {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return nil, errors.New("source: corrupt split assignment")
		}
		out = append(out, p[k:k+int(l)])
		p = p[k+int(l):]
	}
	return out, nil
}

// coordinatorFactory creates a source's enumerator on the JobManager, and
// joins its watermark alignment group, if any.
type coordinatorFactory[T, S any] struct {
	src   source.Source[T, S]
	align *Alignment
}

func (f coordinatorFactory[T, S]) CreateCoordinator(ctx opcoordinator.Context, restored []byte) (opcoordinator.Coordinator, error) {
	c := &sourceCoordinator[T, S]{codec: f.src.SplitCodec(), ctx: ctx, registered: map[int]bool{}}
	if f.align != nil {
		var err error
		if c.aligned, err = joinAlignment(ctx, *f.align); err != nil {
			return nil, err
		}
	}
	e, err := f.src.CreateEnumerator(enumeratorContext[S]{c}, restored)
	if err != nil {
		return nil, err
	}
	c.enum = e
	return c, nil
}

// sourceCoordinator hosts a split enumerator and turns its calls into events.
type sourceCoordinator[T, S any] struct {
	enum       source.Enumerator[S]
	codec      codec.Codec[S]
	ctx        opcoordinator.Context
	registered map[int]bool
	aligned    *alignedCoordinator // nil without watermark alignment
}

type enumeratorContext[S any] struct {
	c interface {
		assign(int, []S)
		noMore(int)
		regs() []int
		par() int
		callAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration)
	}
}

// CallAsync implements source.AsyncCaller when the coordinator's context
// does (opcoordinator.AsyncContext); otherwise the work never runs.
func (e enumeratorContext[S]) CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration) {
	e.c.callAsync(fn, handler, initialDelay, period)
}

func (e enumeratorContext[S]) Parallelism() int                { return e.c.par() }
func (e enumeratorContext[S]) Assign(subtask int, splits ...S) { e.c.assign(subtask, splits) }
func (e enumeratorContext[S]) NoMoreSplits(subtask int)        { e.c.noMore(subtask) }
func (e enumeratorContext[S]) Registered() []int               { return e.c.regs() }

func (c *sourceCoordinator[T, S]) par() int { return c.ctx.Parallelism() }

func (c *sourceCoordinator[T, S]) callAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration) {
	if a, ok := c.ctx.(opcoordinator.AsyncContext); ok {
		a.CallAsync(fn, handler, initialDelay, period)
	}
}

func (c *sourceCoordinator[T, S]) assign(subtask int, splits []S) {
	p := []byte{eventSplitsAssigned}
	p = binary.AppendUvarint(p, uint64(len(splits)))
	var buf []byte
	for _, sp := range splits {
		buf = c.codec.AppendEncode(buf[:0], sp)
		p = binary.AppendUvarint(p, uint64(len(buf)))
		p = append(p, buf...)
	}
	c.ctx.SendEvent(subtask, p)
}

func (c *sourceCoordinator[T, S]) noMore(subtask int) {
	c.ctx.SendEvent(subtask, []byte{eventNoMoreSplits})
}

func (c *sourceCoordinator[T, S]) regs() []int {
	var out []int
	for i := range c.ctx.Parallelism() {
		if c.registered[i] {
			out = append(out, i)
		}
	}
	return out
}

func (c *sourceCoordinator[T, S]) Start() error { return c.enum.Start() }

func (c *sourceCoordinator[T, S]) HandleEvent(subtask int, p []byte) error {
	if len(p) > 0 && p[0] == eventWatermarkReport {
		if c.aligned == nil {
			return fmt.Errorf("source coordinator: a watermark report from subtask %d of a source without watermark alignment", subtask)
		}
		return c.aligned.report(c.ctx, subtask, p[1:])
	}
	if len(p) != 1 {
		return fmt.Errorf("source coordinator: bad event of %d bytes from subtask %d", len(p), subtask)
	}
	switch p[0] {
	case eventReaderRegistered:
		c.registered[subtask] = true
		return c.enum.AddReader(subtask)
	case eventSplitRequest:
		return c.enum.HandleSplitRequest(subtask)
	}
	return fmt.Errorf("source coordinator: unknown event %q from subtask %d", p[0], subtask)
}

func (c *sourceCoordinator[T, S]) SubtaskReset(subtask int) { delete(c.registered, subtask) }

func (c *sourceCoordinator[T, S]) Snapshot(id int64) ([]byte, error) { return c.enum.Snapshot(id) }

func (c *sourceCoordinator[T, S]) Close() error { return c.enum.Close() }
