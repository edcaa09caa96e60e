package operator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/internal/watermark"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/state"
)

// splitWatermarksState is the union list state of a watermarked source's
// split watermarks: one entry per live split output, its id and the last
// watermark it emitted. Union, because after a rescale (or when an
// enumerator hands a split to another reader) a split's watermark must
// reach whichever subtask reads the split, and only the reader knows that.
const splitWatermarksState = "source-split-watermarks"

// directSplit is the id under which the output for records collected
// directly (not through ForSplit) keeps its watermark; split ids come from
// readers, and no reader names a split with a NUL byte first.
const directSplit = "\x00direct"

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
	// Align, if set, aligns the source's watermark with the other sources
	// of its group (see alignment.go).
	Align *Alignment
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
func NewSourceFactoryWithWatermarks[T, S any](src source.Source[T, S], ws SourceWatermarks[T]) (Factory, opcoordinator.Factory) {
	op := FactoryFunc(func(ctx *Context, out any) (Instance, error) {
		w := &watermarkedSource[T, S]{ws: ws, valve: watermark.NewValve(0), splits: map[string]*splitOutput[T, S]{}}
		if a := ws.Align; a != nil {
			if err := a.validate(); err != nil {
				return Instance{}, err
			}
			w.align = &alignState{cfg: *a, allowed: math.MinInt64, wm: math.MinInt64}
			w.blocked = true // until the group first answers
		}
		w.SourceOperator = &SourceOperator[T, S]{codec: src.SplitCodec(), out: newSourceOutput(out.(Input[T]), ctx.Yield), ctx: ctx}
		w.main.src = w
		r, err := src.CreateReader(readerContext{ctx})
		if err != nil {
			return Instance{}, err
		}
		w.reader = r
		if w.align != nil {
			w.align.pauser, _ = r.(source.SplitPauser)
		}
		return Instance{Op: w, Source: w}, nil
	})
	return op, coordinatorFactory[T, S]{src: src, align: ws.Align}
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
	// nextEmit is when the periodic emits are due next.
	nextEmit int64
	// Without any output (no split yet, or all released) the source goes
	// idle after IdleTimeout like a split would: noOutputSince is when the
	// last output went (or Open), noOutputIdle whether it went idle so.
	noOutputSince int64
	noOutputIdle  bool

	// Watermark alignment (nil without): blocked is set while the source
	// must not poll its reader, and makes ShouldYield true, so a reader
	// stops its batch early once the watermark went beyond the allowed.
	align   *alignState
	blocked bool

	tss []int64 // a batch's timestamps (splitOutput.CollectBatch)

	// Checkpointed split watermarks. restored holds those not claimed by
	// an output yet (the minimum per id); pending the outputs made with a
	// restored watermark that the valve has not been given yet (it is
	// given at the end of the poll that made them, once the reader made
	// the outputs of all its splits: given at once, the first split's
	// watermark could advance the source's before a later-made split
	// holds it back). polled is set after the first poll: unclaimed
	// restored watermarks then belong to splits other readers hold.
	wmState  state.ListState[[]byte]
	restored map[string]int64
	pending  []*splitOutput[T, S]
	polled   bool
}

// InitializeState implements StateInitializer: the reader's splits, then
// the split watermarks of the restored checkpoint.
func (w *watermarkedSource[T, S]) InitializeState(restored bool) error {
	if err := w.SourceOperator.InitializeState(restored); err != nil {
		return err
	}
	w.wmState = state.GetUnionListState(w.ctx.OperatorState(), state.ListDescriptor[[]byte]{Name: splitWatermarksState, Codec: codec.Bytes()})
	if !restored {
		return nil
	}
	for _, e := range w.wmState.Get() {
		id, wm, err := decodeSplitWatermark(e)
		if err != nil {
			return err
		}
		if w.restored == nil {
			w.restored = map[string]int64{}
		}
		// An id seen twice (the direct outputs of several subtasks, or a
		// split listed by a reader that restored it but had not polled):
		// the minimum never makes records late that were not.
		if old, ok := w.restored[id]; !ok || wm < old {
			w.restored[id] = wm
		}
	}
	return nil
}

// SnapshotState implements Snapshotter: the reader's splits, then the
// watermark of every live split output.
func (w *watermarkedSource[T, S]) SnapshotState(id int64) error {
	if err := w.SourceOperator.SnapshotState(id); err != nil {
		return err
	}
	enc := make([][]byte, 0, len(w.splits)+1)
	for sid, o := range w.splits {
		if o.emitted > math.MinInt64 {
			enc = append(enc, encodeSplitWatermark(sid, o.emitted))
		}
	}
	if o := w.main.self; o != nil && o.emitted > math.MinInt64 {
		enc = append(enc, encodeSplitWatermark(directSplit, o.emitted))
	}
	if !w.polled {
		// Restored and not read yet: keep them for the next restore.
		for sid, wm := range w.restored {
			enc = append(enc, encodeSplitWatermark(sid, wm))
		}
	}
	w.wmState.Update(enc)
	return nil
}

func encodeSplitWatermark(id string, wm int64) []byte {
	b := binary.AppendUvarint(make([]byte, 0, len(id)+12), uint64(len(id)))
	b = append(b, id...)
	return binary.AppendVarint(b, wm)
}

func decodeSplitWatermark(b []byte) (string, int64, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", 0, errors.New("source: corrupt split watermark in the checkpoint")
	}
	id := string(b[k : k+int(n)])
	wm, k2 := binary.Varint(b[k+int(n):])
	if k2 <= 0 || k+int(n)+k2 != len(b) {
		return "", 0, fmt.Errorf("source: corrupt watermark of split %q in the checkpoint", id)
	}
	return id, wm, nil
}

// Open implements Lifecycle: the reader starts, and periodic emits begin.
func (w *watermarkedSource[T, S]) Open(ctx *Context) error {
	if err := w.SourceOperator.Open(ctx); err != nil {
		return err
	}
	now := ctx.Clock.NowMillis()
	w.nextEmit = now + w.ws.Interval
	w.noOutputSince = now
	next := w.nextEmit
	if a := w.align; a != nil {
		// The first report at once: the source polls only after the
		// group's first answer.
		w.sendReport()
		a.nextReport = now + a.cfg.Interval
		next = min(next, a.nextReport)
	}
	ctx.WakeAt(next)
	return nil
}

// HandleOperatorEvent implements EventHandler: the alignment group's
// answers, and the enumerator's events.
func (w *watermarkedSource[T, S]) HandleOperatorEvent(p []byte) error {
	if len(p) > 0 && p[0] == eventAllowedWatermark {
		return w.onAllowed(p[1:])
	}
	return w.SourceOperator.HandleOperatorEvent(p)
}

// PollNext implements Source: the reader emits through the watermarked
// output; at the end the source is active again for the final watermark.
func (w *watermarkedSource[T, S]) PollNext() (Status, <-chan struct{}, int64, error) {
	if w.blocked && !w.ended {
		// Ahead of the group (or not answered yet): wait for the next
		// answer, which comes as mail and wakes the task; the retry only
		// bounds the wait. Timers, checkpoints and cancellation go on.
		return NothingAvailable, nil, w.align.cfg.Interval, nil
	}
	st, wake, retry, err := w.pollWith(&w.main)
	w.polled = true
	if len(w.pending) > 0 {
		w.applyRestored()
	}
	if a := w.align; a != nil && err == nil {
		if st == EndOfInput && !a.finished {
			w.sendReport() // the group need not wait for the next report
		}
		w.checkSplits()
	}
	return st, wake, retry, err
}

// applyRestored gives the valve the restored watermarks of the outputs
// made in this poll (unless their generator already went beyond).
func (w *watermarkedSource[T, S]) applyRestored() {
	for _, o := range w.pending {
		if o.restoredWM && !o.released {
			o.restoredWM = false
			w.apply(w.valve.Watermark(o.ch, o.emitted))
		}
	}
	clear(w.pending)
	w.pending = w.pending[:0]
}

// OnProcessingTime implements ProcessingTimer: every split's periodic emit
// and idleness check.
func (w *watermarkedSource[T, S]) OnProcessingTime(now int64) {
	if now >= w.nextEmit {
		for _, o := range w.all {
			o.periodic(now)
		}
		if t := w.ws.IdleTimeout; t > 0 && len(w.all) == 0 && !w.noOutputIdle && !w.ended && now-w.noOutputSince >= t {
			// A reader without splits holds nothing back.
			w.noOutputIdle = true
			w.ctx.SetIdle(true)
			if w.align != nil {
				w.align.idle = true
			}
		}
		w.nextEmit = now + w.ws.Interval
	}
	next := w.nextEmit
	if a := w.align; a != nil {
		if now >= a.nextReport {
			w.sendReport()
			a.nextReport = now + a.cfg.Interval
		}
		next = min(next, a.nextReport)
	}
	w.ctx.WakeAt(next)
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
	if a := w.align; a != nil {
		if r.Advanced {
			a.wm = r.Watermark
			w.blocked = a.blocked()
		}
		if r.Status {
			a.idle = r.Idle
		}
	}
}

func (w *watermarkedSource[T, S]) newOutput(id string) *splitOutput[T, S] {
	if w.noOutputIdle {
		// Active again before the split's records (its channel starts at
		// the minimum; downstream counts it once it caught up).
		w.noOutputIdle = false
		w.ctx.SetIdle(false)
		if w.align != nil {
			w.align.idle = false
		}
	}
	ch, r := w.valve.Add()
	o := &splitOutput[T, S]{src: w, ch: ch, max: math.MinInt64, emitted: math.MinInt64, lastActive: w.ctx.Clock.NowMillis()}
	if w.ws.NewGenerator != nil {
		o.gen = w.ws.NewGenerator()
	}
	if w.align != nil {
		w.align.dirty = true
	}
	if wm, ok := w.restored[id]; ok {
		// The split goes on from its checkpointed watermark: its
		// generator starts anew, and emits only beyond it.
		delete(w.restored, id)
		o.emitted, o.restoredWM = wm, true
		w.pending = append(w.pending, o)
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
	if len(w.all) == 0 {
		w.noOutputSince = w.ctx.Clock.NowMillis()
	}
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
	// restoredWM: emitted is a restored watermark the valve has not had.
	restoredWM bool
	// paused: watermark alignment paused the split (source.SplitPauser).
	paused bool
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

// CollectBatch is CollectWithTimestamp for each element in order. Under a
// bounded out-of-orderness strategy (no generator to call per event) whose
// output takes batches, it takes all the batch's timestamps first and hands
// runs of equal ones on as batches (EmitTimestamped): watermarks go out only from
// periodic, never between a batch's elements.
func (o *splitOutput[T, S]) CollectBatch(vs []T) {
	w := o.src
	if o.gen != nil || w.out.batch == nil || len(vs) < 2 {
		for _, v := range vs {
			o.CollectWithTimestamp(v, NoTimestamp)
		}
		return
	}
	if o.idle {
		o.activate()
	}
	o.events += int64(len(vs))
	if w.ws.Timestamp == nil {
		w.out.batch.ProcessBatch(vs, NoTimestamp)
		return
	}
	w.ctx.Enter()
	o.max = EmitTimestamped(w.out.batch, vs, w.ws.Timestamp, &w.tss, o.max)
}

// EmitWatermark implements source.SplitOutput and WatermarkEmitter.
func (o *splitOutput[T, S]) EmitWatermark(wm int64) {
	if o.released || wm <= o.emitted || wm == MaxWatermark {
		return
	}
	if o.idle {
		o.activate()
	}
	o.emitted, o.restoredWM = wm, false
	if a := o.src.align; a != nil {
		a.dirty = true
	}
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
		m.self = m.src.newOutput(directSplit)
	}
	return m.self
}

func (m *mainOutput[T, S]) Collect(v T) { m.direct().Collect(v) }
func (m *mainOutput[T, S]) CollectWithTimestamp(v T, ts int64) {
	m.direct().CollectWithTimestamp(v, ts)
}
func (m *mainOutput[T, S]) CollectBatch(vs []T) { m.direct().CollectBatch(vs) }
func (m *mainOutput[T, S]) ShouldYield() bool   { return m.src.blocked || m.src.out.ShouldYield() }

func (m *mainOutput[T, S]) ForSplit(id string) source.SplitOutput[T] {
	if o, ok := m.src.splits[id]; ok {
		return o
	}
	o := m.src.newOutput(id)
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
