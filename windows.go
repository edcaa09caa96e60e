package weir

import (
	"fmt"
	"math"
	"time"

	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/window"
)

// TimeWindow is the interval [Start, End) of event or processing time, in
// ms since the epoch.
type TimeWindow struct{ Start, End int64 }

// MaxTimestamp is the last ms of the window (End-1): the event-time trigger
// fires the window when the watermark reaches it, and results of the window
// carry it as their timestamp. The GlobalWindow's is math.MaxInt64, as
// Flink's GlobalWindow.maxTimestamp.
func (w TimeWindow) MaxTimestamp() int64 {
	if w.End == math.MaxInt64 && w.Start == math.MinInt64 {
		return math.MaxInt64
	}
	return w.End - 1
}

// GlobalWindow is the one window of GlobalWindows: all of time,
// [math.MinInt64, math.MaxInt64). Its MaxTimestamp is math.MaxInt64; it
// never fires by time and is never cleaned up by time.
var GlobalWindow = TimeWindow{Start: math.MinInt64, End: math.MaxInt64}

// GlobalWindows assigns every element of a key to the GlobalWindow (Flink's
// GlobalWindows). Its default trigger is NeverTrigger: set one
// (WindowedStream.Trigger), as CountWindow does. As Flink's, it is not an
// event-time assigner: elements need no timestamp, are never late, and
// allowed lateness does not apply.
type GlobalWindows struct{}

func (GlobalWindows) AssignWindows(dst []TimeWindow, _, _ int64) []TimeWindow {
	return append(dst, GlobalWindow)
}
func (GlobalWindows) IsEventTime() bool { return false }
func (GlobalWindows) globalWindows()    {}

// isGlobal says whether a is GlobalWindows (or a pointer to it).
func isGlobal(a WindowAssigner) bool {
	_, ok := a.(interface{ globalWindows() })
	return ok
}

func (w TimeWindow) String() string { return fmt.Sprintf("[%d, %d)", w.Start, w.End) }

// WindowAssigner assigns elements to windows, as Flink's WindowAssigner.
// Another module may implement it.
type WindowAssigner interface {
	// AssignWindows appends to dst the windows of an element with event
	// timestamp ts, at processing time now.
	AssignWindows(dst []TimeWindow, ts, now int64) []TimeWindow
	// IsEventTime says whether the windows are of event time (fired by the
	// watermark) or of processing time.
	IsEventTime() bool
}

// MergingWindowAssigner is a WindowAssigner whose windows of one key merge
// when they overlap or touch, as session windows.
type MergingWindowAssigner interface {
	WindowAssigner
	// MergesWindows marks the assigner; it is never called.
	MergesWindows()
}

// ElementWindowAssigner is a WindowAssigner whose windows depend on the
// element too (dynamic session gaps); the window operator calls
// AssignElement instead of AssignWindows.
type ElementWindowAssigner[T any] interface {
	WindowAssigner
	AssignElement(dst []TimeWindow, v T, ts, now int64) []TimeWindow
}

// TumblingWindows assigns each element to the one window of Size holding it,
// aligned to Offset (windows start at k*Size + Offset).
type TumblingWindows struct {
	Size, Offset   time.Duration
	ProcessingTime bool
}

// TumblingEventTimeWindows are tumbling windows of event time.
func TumblingEventTimeWindows(size time.Duration) TumblingWindows { return TumblingWindows{Size: size} }

// TumblingProcessingTimeWindows are tumbling windows of processing time.
func TumblingProcessingTimeWindows(size time.Duration) TumblingWindows {
	return TumblingWindows{Size: size, ProcessingTime: true}
}

// WithOffset aligns the windows to offset (a time zone, say).
func (a TumblingWindows) WithOffset(offset time.Duration) TumblingWindows {
	a.Offset = offset
	return a
}

func (a TumblingWindows) AssignWindows(dst []TimeWindow, ts, now int64) []TimeWindow {
	w := window.Tumbling(timeOf(ts, now, a.ProcessingTime), a.Size.Milliseconds(), a.Offset.Milliseconds())
	return append(dst, TimeWindow(w))
}

func (a TumblingWindows) IsEventTime() bool { return !a.ProcessingTime }
func (a TumblingWindows) windowSize() int64 { return a.Size.Milliseconds() }

func (a TumblingWindows) validate() error { return positiveMs("tumbling window size", a.Size) }

// SlidingWindows assigns each element to every window of Size that holds it,
// one starting every Slide (at k*Slide + Offset).
type SlidingWindows struct {
	Size, Slide, Offset time.Duration
	ProcessingTime      bool
}

// SlidingEventTimeWindows are sliding windows of event time.
func SlidingEventTimeWindows(size, slide time.Duration) SlidingWindows {
	return SlidingWindows{Size: size, Slide: slide}
}

// SlidingProcessingTimeWindows are sliding windows of processing time.
func SlidingProcessingTimeWindows(size, slide time.Duration) SlidingWindows {
	return SlidingWindows{Size: size, Slide: slide, ProcessingTime: true}
}

// WithOffset aligns the windows to offset.
func (a SlidingWindows) WithOffset(offset time.Duration) SlidingWindows { a.Offset = offset; return a }

func (a SlidingWindows) AssignWindows(dst []TimeWindow, ts, now int64) []TimeWindow {
	return window.Sliding(dst, timeOf(ts, now, a.ProcessingTime), a.Size.Milliseconds(), a.Slide.Milliseconds(), a.Offset.Milliseconds())
}

func (a SlidingWindows) IsEventTime() bool { return !a.ProcessingTime }
func (a SlidingWindows) windowSize() int64 { return a.Size.Milliseconds() }

func (a SlidingWindows) validate() error {
	if err := positiveMs("sliding window size", a.Size); err != nil {
		return err
	}
	return positiveMs("sliding window slide", a.Slide)
}

// SessionWindows put elements of a key closer than Gap to each other into
// one window: each element opens [ts, ts+Gap), and windows of a key that
// overlap or touch merge.
type SessionWindows struct {
	Gap            time.Duration
	ProcessingTime bool
}

// EventTimeSessionWindows are session windows of event time.
func EventTimeSessionWindows(gap time.Duration) SessionWindows { return SessionWindows{Gap: gap} }

// ProcessingTimeSessionWindows are session windows of processing time.
func ProcessingTimeSessionWindows(gap time.Duration) SessionWindows {
	return SessionWindows{Gap: gap, ProcessingTime: true}
}

func (a SessionWindows) AssignWindows(dst []TimeWindow, ts, now int64) []TimeWindow {
	return append(dst, TimeWindow(window.Session(timeOf(ts, now, a.ProcessingTime), a.Gap.Milliseconds())))
}

func (a SessionWindows) IsEventTime() bool { return !a.ProcessingTime }
func (SessionWindows) MergesWindows()      {}
func (a SessionWindows) validate() error   { return positiveMs("session gap", a.Gap) }

// DynamicSessionWindows are session windows whose gap each element sets.
type DynamicSessionWindows[T any] struct {
	Gap            func(v T) time.Duration
	ProcessingTime bool
}

// DynamicEventTimeSessionWindows are session windows of event time with a
// gap per element.
func DynamicEventTimeSessionWindows[T any](gap func(v T) time.Duration) DynamicSessionWindows[T] {
	return DynamicSessionWindows[T]{Gap: gap}
}

// AssignWindows is not used: the window operator calls AssignElement.
func (a DynamicSessionWindows[T]) AssignWindows(dst []TimeWindow, ts, now int64) []TimeWindow {
	panic("weir: DynamicSessionWindows needs the element; the window operator calls AssignElement")
}

func (a DynamicSessionWindows[T]) AssignElement(dst []TimeWindow, v T, ts, now int64) []TimeWindow {
	gap := a.Gap(v)
	if gap.Milliseconds() < 1 {
		operator.Fail(fmt.Errorf("dynamic session gap %v for an element: want at least 1ms", gap))
	}
	return append(dst, TimeWindow(window.Session(timeOf(ts, now, a.ProcessingTime), gap.Milliseconds())))
}

func (a DynamicSessionWindows[T]) IsEventTime() bool { return !a.ProcessingTime }
func (DynamicSessionWindows[T]) MergesWindows()      {}
func (a DynamicSessionWindows[T]) validate() error {
	if a.Gap == nil {
		return fmt.Errorf("dynamic session windows need a Gap function")
	}
	return nil
}

func timeOf(ts, now int64, processingTime bool) int64 {
	if processingTime {
		return now
	}
	return ts
}

func positiveMs(what string, d time.Duration) error {
	if d.Milliseconds() < 1 {
		return fmt.Errorf("%s %v: want at least 1ms", what, d)
	}
	return nil
}
