package weir

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/internal/window"
)

// The sliced window operator (docs/windows.md, decision 29): tumbling and
// sliding windows with an incremental function keep one accumulator per key
// and slice (slices are gcd(size, slide) long), so an element costs one
// state update whatever size/slide is, and a window is the merge of its
// slices, served by a per-key two-stacks cache (window.Stacks) that costs
// amortized O(1) merges per firing. Keyed state and timers stay the only
// checkpointed truth: the cache is rebuilt from state whenever it cannot
// answer.

// forceGeneralWindowOp makes every window use the general windowOp (tests
// compare the two operators; see export_test.go).
var forceGeneralWindowOp bool

// slicedOpsOpened counts sliced operators opened, so that tests can tell
// which operator ran.
var slicedOpsOpened atomic.Int64

// defaultWindowSliceCache is Config.WindowSliceCache's default: the number
// of slice accumulators the per-key caches hold in all (about 48 bytes
// each for an 8-byte accumulator, so some 50 MB per subtask).
const defaultWindowSliceCache = 1 << 20

// sliceSpec is the geometry of sliced windows, in ms.
type sliceSpec struct {
	size, slide, offset int64
	g                   int64 // slice length: gcd(size, slide)
	slideOff, gOff      int64 // offset mod slide, offset mod g
	cacheSlices         int   // bound of the per-key caches (Config.WindowSliceCache); 0: none
	logger              *slog.Logger
}

// slicedEligible says whether the windows of w can run on the sliced
// operator: the built-in tumbling and sliding assigners of event time with
// the default trigger and no evictor. (The contents must also be incremental; the
// factory checks that, see slicedInstance.) Nil: use windowOp.
func slicedEligible[K comparable, T any](w WindowedStream[K, T]) *sliceSpec {
	if forceGeneralWindowOp || !w.hasDefaultTrigger() {
		return nil // a custom trigger or an evictor runs on windowOp's trigger path
	}
	var sp sliceSpec
	switch a := w.assigner.(type) {
	case TumblingWindows:
		sp.size, sp.slide, sp.offset = a.Size.Milliseconds(), a.Size.Milliseconds(), a.Offset.Milliseconds()
	case SlidingWindows:
		sp.size, sp.slide, sp.offset = a.Size.Milliseconds(), a.Slide.Milliseconds(), a.Offset.Milliseconds()
	default:
		return nil
	}
	if sp.size < 1 || sp.slide < 1 {
		return nil // Window reported it; the general operator fails the same way
	}
	if !w.assigner.IsEventTime() {
		// Processing-time windows stay on windowOp: slicedOp's
		// processing-time branches follow windowOp's, but no test compares
		// the two yet (that needs a test clock stepped with the records at
		// the window operator), so they are not chosen.
		return nil
	}
	sp.g = window.SliceLen(sp.size, sp.slide)
	sp.slideOff, sp.gOff = sp.offset%sp.slide, sp.offset%sp.g
	cfg := w.ks.env.cfg
	switch n := cfg.WindowSliceCache; {
	case n == 0:
		sp.cacheSlices = defaultWindowSliceCache
	case n > 0:
		sp.cacheSlices = n
	}
	sp.logger = cfg.Logger
	return &sp
}

// start is window.Start(ts, offset, length) for length slide or g (off is
// offset mod length) with one division instead of three, away from the
// ends of int64 where window.Start clamps.
func (sp *sliceSpec) start(ts, length, off int64) int64 {
	if ts < math.MinInt64/2 || ts > math.MaxInt64/2 {
		return window.Start(ts, sp.offset, length)
	}
	r := (ts - off) % length
	if r < 0 {
		r += length
	}
	return ts - r
}

// slicedInstance returns the sliced operator for sp when the contents are
// incremental (one accumulator per window); false: use windowOp.
func slicedInstance[K comparable, T, R, U any](sp *sliceSpec, ctx *operator.Context, out any, c windowContents[T, R],
	em emitter[K, R, U], fn any, key func(T) K, keyCodec codec.Codec[K], eventTime bool, lateness int64, lateTag string) (operator.Instance, bool) {
	sc, ok := c.(sliceContents[T, R])
	if sp == nil || !ok {
		return operator.Instance{}, false
	}
	op := &slicedOp[K, T, R, U]{fnHooks: fnHooks{fn}, fn: fn, key: key, keyCodec: keyCodec, sp: *sp,
		eventTime: eventTime, lateness: lateness, contents: sc, emit: em,
		col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}}
	if lateTag != "" {
		op.late = sideInput[T](ctx, lateTag)
	}
	return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[T](op)}}, true
}

// sliceContents are window contents that can be kept per slice: one
// accumulator, and a combiner that merges a window's slices.
type sliceContents[T, R any] interface {
	windowContents[T, R]
	newCombiner(sp sliceSpec, setSlice func(start int64)) sliceCombiner[R]
	// has says whether the current namespace has an accumulator.
	has() bool
	// sliceState names the state for slices shorter than the windows;
	// before open.
	sliceState()
	// probes says whether probe can work: false when the backend keeps no
	// heap table, so that holding elements back to prefetch their state
	// first cannot pay.
	probes() bool
	// probe takes the first half of a lookup of the current key's and
	// namespace's accumulator and appends the cache lines of the slots it
	// names to dst (typedstore.Table.ProbeLines); false: it could not.
	probe(p *typedstore.Probe, dst []uintptr) ([]uintptr, bool)
	// slotBytes is the size of the heap table's slots.
	slotBytes() uintptr
	// addProbed is add for the key and namespace p was taken for, when
	// their accumulator exists and is where p says: false (and nothing
	// done) otherwise.
	addProbed(p *typedstore.Probe, v T) bool
	// entries is the number of accumulators of all keys and namespaces in
	// the state, where that is cheap to know (the heap backend); else 0.
	entries() int
}

// sliceCombiner computes windows from their slices for the current key.
type sliceCombiner[R any] interface {
	// result is the window w of the key whose encoding is key: the merge
	// of its slices, false when they are all empty. It moves the state's
	// namespace.
	result(key []byte, w window.Window) (R, bool)
	// changed says that the slice starting at start got an element.
	changed(key []byte, start int64)
	// cleaned says that the key's slices before start were cleared.
	cleaned(key []byte, start int64)
	// quiet says that changed(key, start) does nothing, whatever the key.
	quiet(start int64) bool
}

func (c *valueContents[T, ACC, R]) has() bool {
	_, ok := c.st.Value()
	return ok
}

func (c *valueContents[T, ACC, R]) entries() int {
	if c.tab == nil {
		return 0
	}
	return c.tab.Len()
}

func (c *valueContents[T, ACC, R]) probes() bool { return c.tab != nil }

func (c *valueContents[T, ACC, R]) probe(p *typedstore.Probe, dst []uintptr) ([]uintptr, bool) {
	if c.tab == nil {
		return dst, false
	}
	return c.tab.ProbeLines(p, dst)
}

func (c *valueContents[T, ACC, R]) slotBytes() uintptr { return c.tab.SlotBytes() }

func (c *valueContents[T, ACC, R]) addProbed(p *typedstore.Probe, v T) bool {
	e := c.tab.Probed(p)
	if e == nil {
		return false
	}
	e.Val = c.addFn(e.Val, true, v)
	return true
}

func (c *valueContents[T, ACC, R]) sliceState() {
	c.name = "window-slice-" + strings.TrimPrefix(c.name, "window-")
}

func (c *valueContents[T, ACC, R]) newCombiner(sp sliceSpec, setSlice func(int64)) sliceCombiner[R] {
	return &sliceCombinerOf[T, ACC, R]{c: c, g: sp.g, limit: sp.cacheSlices, logger: sp.logger,
		setSlice: setSlice, cache: map[string]*sliceCache[ACC]{}, pushedMax: math.MinInt64}
}

// sliceCombinerOf keeps, per key, a two-stacks queue of the key's slice
// accumulators that the last firing used. It is a cache over keyed state:
// an entry is dropped when a slice it covers changes (a late element), and
// a window the cache cannot serve (a key without an entry when the cache is
// full, or a window older than the entry's) is merged from state directly.
type sliceCombinerOf[T, ACC, R any] struct {
	c        *valueContents[T, ACC, R]
	g        int64
	limit    int // most slices in all entries
	slices   int // slices in all entries
	logger   *slog.Logger
	warned   bool
	setSlice func(start int64)
	cache    map[string]*sliceCache[ACC]
	free     []*sliceCache[ACC]
	// pushedMax bounds every entry's pushed: an element of a slice at or
	// after it changes no entry, so the common element needs no lookup.
	pushedMax int64
}

// sliceCache is one key's entry: q holds the non-empty slices in
// [from, pushed), read from state after they were complete.
type sliceCache[ACC any] struct {
	q            *window.Stacks[ACC]
	from, pushed int64
}

func (s *sliceCombinerOf[T, ACC, R]) quiet(start int64) bool { return start >= s.pushedMax }

func (s *sliceCombinerOf[T, ACC, R]) changed(key []byte, start int64) {
	if s.quiet(start) {
		return
	}
	if e := s.cache[string(key)]; e != nil && start < e.pushed && start >= e.from {
		s.drop(key, e)
	}
}

func (s *sliceCombinerOf[T, ACC, R]) cleaned(key []byte, start int64) {
	e := s.cache[string(key)]
	if e == nil {
		return
	}
	if start > e.from {
		n := e.q.Len()
		e.q.EvictBefore(start)
		s.slices -= n - e.q.Len()
		e.from = start
	}
	if e.q.Len() == 0 {
		s.drop(key, e)
	}
}

func (s *sliceCombinerOf[T, ACC, R]) drop(key []byte, e *sliceCache[ACC]) {
	s.slices -= e.q.Len()
	e.q.Reset()
	delete(s.cache, string(key))
	s.free = append(s.free, e)
}

func (s *sliceCombinerOf[T, ACC, R]) result(key []byte, w window.Window) (R, bool) {
	if w.End-w.Start <= s.g {
		return s.direct(w) // one slice (tumbling windows): nothing to cache
	}
	e := s.cache[string(key)]
	if e == nil {
		if s.limit == 0 || s.slices >= s.limit {
			s.full()
			return s.direct(w)
		}
		if n := len(s.free); n > 0 {
			e, s.free = s.free[n-1], s.free[:n-1]
		} else {
			e = &sliceCache[ACC]{q: window.NewStacks(s.c.mergeFn)}
		}
		e.from, e.pushed = w.Start, w.Start
		s.cache[string(key)] = e
	}
	if w.Start < e.from || w.End < e.pushed {
		return s.direct(w) // an older window than the entry's (a late firing)
	}
	if w.Start > e.from {
		n := e.q.Len()
		e.q.EvictBefore(w.Start)
		s.slices -= n - e.q.Len()
		e.from = w.Start
	}
	for st := max(e.pushed, w.Start); st < w.End; st += s.g {
		s.setSlice(st)
		if acc, ok := s.c.st.Value(); ok {
			e.q.Push(st, acc)
			s.slices++
		}
		if st > math.MaxInt64-s.g {
			break
		}
	}
	e.pushed = w.End
	s.pushedMax = max(s.pushedMax, w.End)
	acc, ok := e.q.Query()
	if s.slices > s.limit {
		// Over the bound: this key's entry goes, the others stay.
		s.full()
		s.drop(key, e)
	}
	if !ok {
		var zero R
		return zero, false
	}
	return s.c.resultFn(acc), true
}

// full notes, once, that the cache bound makes windows merge from state.
func (s *sliceCombinerOf[T, ACC, R]) full() {
	if !s.warned && s.limit > 0 {
		s.warned = true
		s.logger.Info("weir: the window slice cache is full (Config.WindowSliceCache): windows of further keys merge their slices from state, which costs one state read per slice",
			"limit", s.limit)
	}
}

// direct merges w's slices from state.
func (s *sliceCombinerOf[T, ACC, R]) direct(w window.Window) (R, bool) {
	var acc ACC
	have := false
	for st := w.Start; st < w.End; st += s.g {
		s.setSlice(st)
		if v, ok := s.c.st.Value(); ok {
			if have {
				acc = s.c.mergeFn(acc, v)
			} else {
				acc, have = v, true
			}
		}
		if st > math.MaxInt64-s.g {
			break
		}
	}
	if !have {
		var zero R
		return zero, false
	}
	return s.c.resultFn(acc), true
}

// slicedOp is windowOp (the default event- or processing-time trigger, no
// evictor) for tumbling and sliding windows with incremental contents:
// state per key and slice, timers per key and window.
type slicedOp[K comparable, T, R, U any] struct {
	fnHooks
	fn        any
	key       func(T) K
	keyCodec  codec.Codec[K]
	sp        sliceSpec
	eventTime bool
	lateness  int64
	contents  sliceContents[T, R]
	comb      sliceCombiner[R]
	emit      emitter[K, R, U]
	late      operator.Input[T]
	dropped   *operator.Counter // numLateRecordsDropped: late elements without a late output
	saved     watermarkState

	core *keyedruntime.Core[K]
	ctx  *operator.Context
	col  collector[U]
	wctx windowContext[K]
	ns   []byte // the state namespace (a slice)
	// nsStart is the slice ns names, if nsSet.
	nsStart int64
	nsSet   bool
	tns     []byte // the timer namespace (a window)
	fire    func(timers.Timer)
	wins    []window.Window

	// rh holds elements back in runs whose accumulators are prefetched
	// first (runHold), when the contents' table can be probed in event
	// time; x is each element's slice and the first half of the lookup of
	// its accumulator there.
	rh runHold[K, T, sliceProbe]
}

// sliceProbe is what EndRun keeps of a held element: the slice pr is for,
// and whether the probe was taken (probed).
type sliceProbe struct {
	slice  int64
	probed bool
	pr     typedstore.Probe
}

// setHold decides, from the size of the state, whether elements are held
// back: at each watermark (a firing may have emptied the state), and at
// each new accumulator while they are not.
func (o *slicedOp[K, T, R, U]) setHold() {
	o.rh.hold = o.rh.runs && o.contents.entries() >= holdMinEntries
}

// UseRuns implements operator.RunEnder.
func (o *slicedOp[K, T, R, U]) UseRuns() { o.rh.runs = true }

// EndRun implements operator.RunEnder: it processes the elements held
// back, prefetching every element's accumulator before it processes the
// first, so that their cache misses overlap.
func (o *slicedOp[K, T, R, U]) EndRun() {
	pend := o.rh.pend
	if len(pend) == 0 {
		return
	}
	o.ctx.Enter()
	// First where the accumulators are (which sets each key once: the
	// key's hash and image are kept in its probe), then one prefetch per
	// cache line of their slots, all in one call. Prefetches, not loads:
	// a prefetch retires at once, where a load that misses holds its
	// place in the core's reorder window until the data comes, so loads
	// would overlap only as many misses as the window holds.
	// [lo, hi) is the last slice computed: most elements of a run are of
	// one slice, and a slice's start is a division.
	lo, hi := int64(0), int64(0)
	lines := o.rh.lines[:0]
	for i := range pend {
		p := &pend[i]
		p.x.probed = false
		if p.ts == NoTimestamp {
			continue // processElement reports it
		}
		o.core.SetKey(p.key)
		if p.ts >= lo && p.ts < hi {
			p.x.slice = lo
		} else {
			p.x.slice = o.sp.start(p.ts, o.sp.g, o.sp.gOff)
			if p.x.slice > math.MinInt64/2 && p.x.slice < math.MaxInt64/2 {
				lo, hi = p.x.slice, p.x.slice+o.sp.g
			}
		}
		o.setSlice(p.x.slice)
		lines, p.x.probed = o.contents.probe(&p.x.pr, lines)
	}
	o.rh.prefetch(lines)
	// Whether an element can take addProbed's path depends on its slice
	// alone (and the watermark, which does not move here): the last slice
	// asked is remembered until the full path runs, which may fire windows
	// and so change the answer.
	wm := o.core.CurrentWatermark()
	fast, fastSlice, fastSet := false, int64(0), false
	for i := range pend {
		p := &pend[i]
		if p.x.probed {
			if !fastSet || p.x.slice != fastSlice {
				fast, fastSlice, fastSet = o.probedPath(p.ts, p.x.slice, wm), p.x.slice, true
			}
			if fast && o.contents.addProbed(&p.x.pr, p.v) {
				continue
			}
		}
		o.processElement(p.v, p.ts, p.key)
		fastSet = false
	}
	o.rh.done()
}

// probedPath says whether the elements of slice s (t one of their
// timestamps) can be added to their accumulator as their probe found it
// (sliceContents.addProbed), which is processElement in the common case:
// on time, in a slice the watermark has not passed, and nothing for the
// combiner to drop. The rest (and a slice's first element, which the
// probe does not find) take processElement. The answer is the same for
// every element of the slice: windows start and end on slice boundaries.
func (o *slicedOp[K, T, R, U]) probedPath(t, s, wm int64) bool {
	lastStart := s // the slice starts with the window when slide is a whole slice
	if o.sp.g != o.sp.slide {
		lastStart = o.sp.start(t, o.sp.slide, o.sp.slideOff)
	}
	last := window.Window{Start: lastStart, End: sliceEnd(lastStart, o.sp.size)}
	return last.End > t && !o.isLate(last, wm) && sliceEnd(s, o.sp.g)-1 > wm && o.comb.quiet(s)
}

func (o *slicedOp[K, T, R, U]) Open(ctx *operator.Context) error {
	core, dropped, err := openWindowCore(ctx, o.keyCodec, &o.saved)
	if err != nil {
		return err
	}
	o.core, o.ctx, o.dropped = core, ctx, dropped
	if o.sp.g != o.sp.size {
		// Sliding windows keep slices, not windows: another state, so that a
		// checkpoint of windowOp's windows is never read as slices. (Tumbling
		// slices are the windows, stored as windowOp stores them.)
		o.contents.sliceState()
	}
	o.contents.open(core.Store())
	o.comb = o.contents.newCombiner(o.sp, o.setSlice)
	o.wctx = windowContext[K]{runtimeContext: runtimeContext{ctx}, core: core}
	o.fire = o.onTimer
	if !o.contents.probes() || !o.eventTime {
		// Nothing to prefetch; or processing time, where an element reads the
		// clock when it is processed, which holding it back would move.
		o.rh.runs = false
	}
	if o.rh.runs {
		o.rh.start(o.contents.slotBytes())
	}
	o.setHold() // a restored state may be large
	slicedOpsOpened.Add(1)
	return openFn(o.fn, keyedRuntimeContext{runtimeContext{ctx}, core.Store()})
}

func (o *slicedOp[K, T, R, U]) Finish() error {
	o.EndRun()
	return nil
}

// SnapshotState implements operator.Snapshotter, as windowOp's.
func (o *slicedOp[K, T, R, U]) SnapshotState(id int64) error {
	o.EndRun() // none are held: the reader ended the run before the barrier
	o.saved.save(o.core.CheckpointWatermark())
	return o.fnHooks.SnapshotState(id)
}

func (o *slicedOp[K, T, R, U]) Close() error { return closeFn(o.fn) }

// setSlice makes the slice starting at start the namespace of state: its
// start in the 7 bytes of a compact namespace, so that the state key of an
// 8-byte key stays within the heap table's 16 inline bytes.
//
// The state's namespace survives a change of key, and consecutive elements
// of different keys are mostly of one slice, so an unchanged slice is not
// set again (two copies and a new key image per element). Only setSlice
// moves the state's namespace in this operator.
func (o *slicedOp[K, T, R, U]) setSlice(start int64) {
	if o.nsSet && start == o.nsStart {
		return
	}
	o.ns = window.AppendCompactNamespace(o.ns[:0], window.Window{Start: start, End: start + o.sp.g})
	o.core.SetStateNamespace(o.ns)
	o.nsStart, o.nsSet = start, true
}

// setTimerWindow makes w the namespace of timers, as windowOp names it.
func (o *slicedOp[K, T, R, U]) setTimerWindow(w window.Window) {
	o.tns = window.AppendCompactNamespace(o.tns[:0], w)
	o.core.SetTimerNamespace(o.tns)
}

// windowsOf sets o.wins to the windows holding t (and so its slice),
// latest start first: the order of window.Sliding, so of windowOp's
// firings.
func (o *slicedOp[K, T, R, U]) windowsOf(t int64) {
	o.wins = window.Sliding(o.wins[:0], t, o.sp.size, o.sp.slide, o.sp.offset)
}

func (o *slicedOp[K, T, R, U]) ProcessElement(v T, ts int64) {
	o.ctx.Enter()
	if o.rh.hold {
		if o.rh.add(v, ts, o.key(v)) {
			o.EndRun()
		}
		return
	}
	o.processElement(v, ts, o.key(v))
}

// processElement adds v, of key k, to its slice.
func (o *slicedOp[K, T, R, U]) processElement(v T, ts int64, k K) {
	o.ctx.Enter()
	o.core.SetKey(k)
	t := ts
	if !o.eventTime {
		t = o.ctx.Clock.NowMillis()
	} else if ts == NoTimestamp {
		operator.Fail(errors.New("an element without a timestamp reached an event-time window: assign timestamps first (AssignTimestampsAndWatermarks)"))
	}
	wm := o.core.CurrentWatermark()
	// The latest window holding t has the latest cleanup: if it is late
	// (or absent: t in a gap between windows of a slide > size), every
	// window of the element is, and it is skipped.
	lastStart := o.sp.start(t, o.sp.slide, o.sp.slideOff)
	last := window.Window{Start: lastStart, End: sliceEnd(lastStart, o.sp.size)}
	if last.End <= t || o.isLate(last, wm) {
		if o.eventTime && window.IsElementLate(ts, o.lateness, wm) {
			if o.late != nil {
				o.late.ProcessElement(v, ts)
				o.ctx.Enter()
			} else {
				o.dropped.Inc() // Flink's numLateRecordsDropped
			}
		}
		return
	}
	s := lastStart // the slice starts with the window when slide is a whole slice
	if o.sp.g != o.sp.slide {
		s = o.sp.start(t, o.sp.g, o.sp.gOff)
	}
	o.setSlice(s)
	fresh := o.contents.add(v)
	o.comb.changed(o.core.KeyBytes(), s)
	switch {
	case fresh:
		if o.rh.runs && !o.rh.hold {
			// The state grew: hold elements back from the next one on, not
			// from the next watermark (the first comes after the periodic
			// interval, a fifth of a 20 M event run on the full path).
			o.setHold()
		}
		// A slice's first element registers the timers of its windows
		// (the timer service keeps one of each); later elements of the
		// slice find them there, as windowOp's later elements of a window.
		//
		// In event time, when the previous slice holds elements, the
		// windows holding both got their timers from it (they were not
		// late then, since they are not now; by induction that slice's
		// own predecessor did the same), so only the windows starting
		// after it need them: at most one per slice instead of
		// size/slide (a dense key's sliding windows were all timer
		// lookups). Not in processing time, where a window's timers may
		// have fired (and cleaned it) while it is not late, nor when the
		// slice is behind the watermark (late firings need every window).
		skipFrom := int64(math.MinInt64)
		if o.eventTime && sliceEnd(s, o.sp.g)-1 > wm && s >= math.MinInt64+o.sp.g {
			o.setSlice(s - o.sp.g)
			if o.contents.has() {
				skipFrom = s - o.sp.g
			}
		}
		// The windows holding t, latest start first (as window.Sliding).
		for st := lastStart; ; st -= o.sp.slide {
			w := window.Window{Start: st, End: sliceEnd(st, o.sp.size)}
			if w.End <= t || st <= skipFrom {
				break
			}
			if !o.isLate(w, wm) {
				o.onFreshSlice(w, wm)
			}
			if st < math.MinInt64+o.sp.slide {
				break
			}
		}
	case o.eventTime && sliceEnd(s, o.sp.g)-1 <= wm:
		// Only a slice the watermark passed has windows to fire late.
		o.windowsOf(t)
		for _, w := range o.wins {
			if !o.isLate(w, wm) && w.MaxTimestamp() <= wm {
				o.fireWindow(w)
			}
		}
	}
}

// onFreshSlice is windowOp's onElement and registerCleanup for window w,
// not late, of a slice's first element.
func (o *slicedOp[K, T, R, U]) onFreshSlice(w window.Window, wm int64) {
	if o.eventTime && w.MaxTimestamp() <= wm {
		o.fireWindow(w) // a late firing
	} else {
		o.setTimerWindow(w)
		if o.eventTime {
			o.core.RegisterEventTimeTimer(w.MaxTimestamp())
		} else {
			o.core.RegisterProcessingTimeTimer(w.MaxTimestamp())
		}
	}
	// With no lateness the cleanup timer is the firing one.
	if c := window.CleanupTime(w, o.lateness); c != math.MaxInt64 && c != w.MaxTimestamp() {
		o.setTimerWindow(w)
		if o.eventTime {
			o.core.RegisterEventTimeTimer(c)
		} else {
			o.core.RegisterProcessingTimeTimer(c)
		}
	}
}

func sliceEnd(start, size int64) int64 {
	if start > math.MaxInt64-size {
		return math.MaxInt64
	}
	return start + size
}

func (o *slicedOp[K, T, R, U]) isLate(w window.Window, wm int64) bool {
	return o.eventTime && window.IsWindowLate(w, o.lateness, wm)
}

// fireWindow emits window w of the current key.
func (o *slicedOp[K, T, R, U]) fireWindow(w window.Window) {
	r, ok := o.comb.result(o.core.KeyBytes(), w)
	if !ok {
		return
	}
	ts := w.MaxTimestamp()
	o.col.ts = ts
	o.wctx.window, o.wctx.ts = TimeWindow(w), ts
	// A window function's own keyed state sees the window's namespace, as
	// on windowOp (a compact namespace is the start alone, so the window's
	// is its first slice's).
	o.setSlice(w.Start)
	if err := o.emit(&o.wctx, r, &o.col); err != nil {
		operator.Fail(err)
	}
	o.ctx.Enter()
}

// onTimer fires the window a timer names, or cleans it up: clears the
// slices it is the last window of (those before the next window's start).
func (o *slicedOp[K, T, R, U]) onTimer(tm timers.Timer) {
	o.core.SetKeyBytes(tm.Key)
	w, err := window.ParseNamespaceSized(tm.Namespace, o.sp.size)
	if err != nil {
		operator.Fail(fmt.Errorf("a window timer: %w", err))
	}
	if tm.Timestamp == w.MaxTimestamp() {
		o.fireWindow(w)
	}
	if tm.Timestamp == window.CleanupTime(w, o.lateness) {
		end := min(w.End, sliceEnd(w.Start, o.sp.slide))
		for s := w.Start; s < end; s += o.sp.g {
			o.setSlice(s)
			o.contents.clear()
			if s > math.MaxInt64-o.sp.g {
				break
			}
		}
		o.comb.cleaned(o.core.KeyBytes(), end)
	}
}

// ProcessWatermark fires the windows the watermark passed, then forwards it.
// A watermark at or below the restored one is not forwarded again.
func (o *slicedOp[K, T, R, U]) ProcessWatermark(wm int64) {
	o.EndRun()
	o.ctx.Enter()
	if wm <= o.core.CurrentWatermark() {
		return
	}
	o.core.AdvanceWatermark(wm, o.fire)
	o.setHold()
	o.col.out.ProcessWatermark(wm)
}

// OnProcessingTime implements operator.ProcessingTimer.
func (o *slicedOp[K, T, R, U]) OnProcessingTime(now int64) {
	o.EndRun()
	o.ctx.Enter()
	o.core.FireProcessingTime(now, o.fire)
}
