package operator

import (
	"math"

	"github.com/weirhq/weir/internal/watermark"
	"github.com/weirhq/weir/source"
)

// SourceWatermarks is a watermark strategy given to a source (Flink's
// env.fromSource(source, strategy, name)); the root package builds it from
// a weir.WatermarkStrategy.
type SourceWatermarks[T any] struct {
	// Timestamp, if set, assigns each record's timestamp (nil: the one the
	// reader gave with CollectWithTimestamp).
	Timestamp func(T) int64
	// Delay is the bounded out-of-orderness (ms), used without NewGenerator.
	Delay int64
	// NewGenerator, if set, makes each split's generator.
	NewGenerator func() WatermarkGenerator[T]
	// Interval (ms) between periodic emits; IdleTimeout (ms) > 0 marks a
	// split idle after that long without records.
	Interval, IdleTimeout int64
}

// WatermarkGenerator is a user's generator as the engine calls it.
type WatermarkGenerator[T any] interface {
	OnEvent(v T, ts int64, out WatermarkEmitter)
	OnPeriodicEmit(out WatermarkEmitter)
}

// WatermarkEmitter receives a generator's watermarks.
type WatermarkEmitter interface{ EmitWatermark(wm int64) }

// NewSourceFactoryWithWatermarks is NewSourceFactory with a watermark
// strategy: the reader's output has one generator per split (ForSplit) and
// one for records collected directly, and the source's watermark is the
// minimum over them (internal/watermark.Valve: idle and released splits
// leave it).
func NewSourceFactoryWithWatermarks[T, S any](src source.Source[T, S], ws SourceWatermarks[T]) (Factory, CoordinatorFactory) {
	op := FactoryFunc(func(ctx *Context, out any) (Instance, error) {
		w := &watermarkedSource[T, S]{ws: ws, valve: watermark.NewValve(0), splits: map[string]*splitOutput[T, S]{}}
		w.SourceOperator = &SourceOperator[T, S]{codec: src.SplitCodec(), out: sourceOutput[T]{out.(Input[T]), ctx.Yield}, ctx: ctx}
		w.main.src = w
		r, err := src.CreateReader(readerContext{ctx})
		if err != nil {
			return Instance{}, err
		}
		w.reader = r
		return Instance{Op: w, Source: w}, nil
	})
	return op, coordinatorFactory[T, S]{src}
}

// watermarkedSource is a SourceOperator whose records get timestamps and
// watermarks per split.
type watermarkedSource[T, S any] struct {
	*SourceOperator[T, S]
	ws     SourceWatermarks[T]
	valve  *watermark.Valve
	splits map[string]*splitOutput[T, S]
	all    []*splitOutput[T, S] // live outputs, main included once used
	main   mainOutput[T, S]
}

// Open implements Lifecycle: the reader starts, and periodic emits begin.
func (w *watermarkedSource[T, S]) Open(ctx *Context) error {
	if err := w.SourceOperator.Open(ctx); err != nil {
		return err
	}
	ctx.WakeAt(ctx.Clock.NowMillis() + w.ws.Interval)
	return nil
}

// PollNext implements Source: the reader emits through the watermarked
// output; at the end the source is active again for the final watermark.
func (w *watermarkedSource[T, S]) PollNext() (Status, <-chan struct{}, int64, error) {
	return w.pollWith(&w.main)
}

// OnProcessingTime implements ProcessingTimer: every split's periodic emit
// and idleness check.
func (w *watermarkedSource[T, S]) OnProcessingTime(now int64) {
	for _, o := range w.all {
		o.periodic(now)
	}
	w.ctx.WakeAt(now + w.ws.Interval)
}

// apply passes on what the valve decided: active before the watermark,
// idle after it.
func (w *watermarkedSource[T, S]) apply(r watermark.Result) {
	if r.Status && !r.Idle {
		w.ctx.SetIdle(false)
	}
	if r.Advanced && !w.ended {
		w.ctx.Enter()
		w.out.in.ProcessWatermark(r.Watermark)
	}
	if r.Status && r.Idle {
		w.ctx.SetIdle(true)
	}
}

func (w *watermarkedSource[T, S]) newOutput() *splitOutput[T, S] {
	ch, r := w.valve.Add()
	o := &splitOutput[T, S]{src: w, ch: ch, max: math.MinInt64, emitted: math.MinInt64, lastActive: w.ctx.Clock.NowMillis()}
	if w.ws.NewGenerator != nil {
		o.gen = w.ws.NewGenerator()
	}
	w.all = append(w.all, o)
	w.apply(r)
	return o
}

func (w *watermarkedSource[T, S]) release(o *splitOutput[T, S]) {
	for i, x := range w.all {
		if x == o {
			w.all = append(w.all[:i], w.all[i+1:]...)
			break
		}
	}
	w.apply(w.valve.End(o.ch))
}

// splitOutput is one split's output: its generator, its idleness, its
// channel in the valve.
type splitOutput[T, S any] struct {
	src                      *watermarkedSource[T, S]
	ch                       int
	gen                      WatermarkGenerator[T]
	max, emitted             int64
	events, seen, lastActive int64
	idle, released           bool
}

func (o *splitOutput[T, S]) Collect(v T) { o.CollectWithTimestamp(v, NoTimestamp) }

func (o *splitOutput[T, S]) CollectWithTimestamp(v T, ts int64) {
	w := o.src
	if o.idle {
		o.activate()
	}
	o.events++
	if w.ws.Timestamp != nil {
		ts = w.ws.Timestamp(v)
	}
	w.out.in.ProcessElement(v, ts)
	if o.gen != nil {
		w.ctx.Enter()
		o.gen.OnEvent(v, ts, o)
	} else if ts > o.max {
		o.max = ts
	}
}

func (o *splitOutput[T, S]) CollectBatch(vs []T) {
	for _, v := range vs {
		o.CollectWithTimestamp(v, NoTimestamp)
	}
}

// EmitWatermark implements source.SplitOutput and WatermarkEmitter.
func (o *splitOutput[T, S]) EmitWatermark(wm int64) {
	if o.released || wm <= o.emitted || wm == MaxWatermark {
		return
	}
	if o.idle {
		o.activate()
	}
	o.emitted = wm
	o.src.apply(o.src.valve.Watermark(o.ch, wm))
}

// MarkIdle implements source.SplitOutput.
func (o *splitOutput[T, S]) MarkIdle() {
	if o.released || o.idle {
		return
	}
	o.idle = true
	o.src.apply(o.src.valve.Idle(o.ch))
}

func (o *splitOutput[T, S]) activate() {
	o.idle = false
	o.src.apply(o.src.valve.Active(o.ch))
}

func (o *splitOutput[T, S]) periodic(now int64) {
	if o.gen != nil {
		o.gen.OnPeriodicEmit(o)
	} else if wm, ok := boundedWatermarkMs(o.max, o.src.ws.Delay); ok {
		o.EmitWatermark(wm)
	}
	if t := o.src.ws.IdleTimeout; t > 0 {
		if o.events != o.seen {
			o.seen, o.lastActive = o.events, now
		} else if !o.idle && now-o.lastActive >= t {
			o.MarkIdle()
		}
	}
}

// boundedWatermarkMs is max - delay - 1, false below the int64 range.
func boundedWatermarkMs(max, delay int64) (int64, bool) {
	if uint64(max)-(1<<63) > uint64(delay) {
		return max - delay - 1, true
	}
	return 0, false
}

// mainOutput is the reader's source.Output with a strategy: records
// collected directly go through an output of their own, made on first use;
// ForSplit looks up or makes a split's.
type mainOutput[T, S any] struct {
	src  *watermarkedSource[T, S]
	self *splitOutput[T, S]
}

func (m *mainOutput[T, S]) direct() *splitOutput[T, S] {
	if m.self == nil {
		m.self = m.src.newOutput()
	}
	return m.self
}

func (m *mainOutput[T, S]) Collect(v T) { m.direct().Collect(v) }
func (m *mainOutput[T, S]) CollectWithTimestamp(v T, ts int64) {
	m.direct().CollectWithTimestamp(v, ts)
}
func (m *mainOutput[T, S]) CollectBatch(vs []T) { m.direct().CollectBatch(vs) }
func (m *mainOutput[T, S]) ShouldYield() bool   { return m.src.out.ShouldYield() }

func (m *mainOutput[T, S]) ForSplit(id string) source.SplitOutput[T] {
	if o, ok := m.src.splits[id]; ok {
		return o
	}
	o := m.src.newOutput()
	m.src.splits[id] = o
	return o
}

func (m *mainOutput[T, S]) ReleaseSplit(id string) {
	o, ok := m.src.splits[id]
	if !ok {
		return
	}
	delete(m.src.splits, id)
	o.released = true
	m.src.release(o)
}
