package operator

// SourceReader reads one subtask's share of a source. Its methods run on the
// task goroutine.
type SourceReader[T any] interface {
	// Open prepares the reader for subtask ctx.Subtask of ctx.Parallelism.
	Open(ctx *Context) error
	// Poll emits up to a bounded batch of records into out. With
	// NothingAvailable, the task waits until wait is signalled, or for
	// retryAfterMillis when wait is nil.
	Poll(out Input[T]) (status Status, wait <-chan struct{}, retryAfterMillis int64, err error)
	Close() error
}

// SourceOperator runs a SourceReader as the head of a chain.
type SourceOperator[T any] struct {
	reader SourceReader[T]
	out    Input[T]
	ctx    *Context
	ended  bool
}

// NewSourceFactory returns a factory that creates a reader per subtask.
func NewSourceFactory[T any](newReader func() SourceReader[T]) Factory {
	return FactoryFunc(func(ctx *Context, out any) (Instance, error) {
		op := &SourceOperator[T]{reader: newReader(), out: out.(Input[T]), ctx: ctx}
		return Instance{Op: op, Source: op}, nil
	})
}

// Open implements Lifecycle.
func (s *SourceOperator[T]) Open(ctx *Context) error { return s.reader.Open(ctx) }

// Finish implements Lifecycle.
func (s *SourceOperator[T]) Finish() error { return nil }

// Close implements Lifecycle.
func (s *SourceOperator[T]) Close() error { return s.reader.Close() }

// PollNext implements Source. At the end of input it emits the maximum
// watermark, so every event-time timer downstream fires.
func (s *SourceOperator[T]) PollNext() (Status, <-chan struct{}, int64, error) {
	st, wait, retry, err := s.reader.Poll(s.out)
	if st == EndOfInput && err == nil && !s.ended {
		s.ended = true
		s.ctx.Enter()
		s.out.ProcessWatermark(MaxWatermark)
	}
	return st, wait, retry, err
}

// SinkWriter receives the records of one sink subtask.
type SinkWriter[T any] interface {
	Open(ctx *Context) error
	Write(v T, ts int64) error
	// Finish is called at the end of input, before Close.
	Finish() error
	Close() error
}

// SinkOperator runs a SinkWriter as the tail of a chain.
type SinkOperator[T any] struct {
	w   SinkWriter[T]
	ctx *Context
}

// NewSinkFactory returns a factory that creates a writer per subtask.
func NewSinkFactory[T any](newWriter func() SinkWriter[T]) Factory {
	return FactoryFunc(func(ctx *Context, _ any) (Instance, error) {
		op := &SinkOperator[T]{w: newWriter(), ctx: ctx}
		return Instance{Op: op, Inputs: []any{Input[T](op)}}, nil
	})
}

// ProcessElement implements Input.
func (s *SinkOperator[T]) ProcessElement(v T, ts int64) {
	s.ctx.Enter()
	if err := s.w.Write(v, ts); err != nil {
		Fail(err)
	}
}

// ProcessWatermark implements Input.
func (s *SinkOperator[T]) ProcessWatermark(int64) {}

// FlushOutput hands on what the writer buffered, if it buffers.
func (s *SinkOperator[T]) FlushOutput() error {
	if f, ok := s.w.(OutputFlusher); ok {
		return f.FlushOutput()
	}
	return nil
}

// OutputFlusher is implemented by operators (and sink writers) that hold
// output back; the task calls FlushOutput on its buffer timeout.
type OutputFlusher interface{ FlushOutput() error }

// Open implements Lifecycle.
func (s *SinkOperator[T]) Open(ctx *Context) error { return s.w.Open(ctx) }

// Finish implements Lifecycle.
func (s *SinkOperator[T]) Finish() error { return s.w.Finish() }

// Close implements Lifecycle.
func (s *SinkOperator[T]) Close() error { return s.w.Close() }
