package weir

import (
	"math"

	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/internal/window"
	"github.com/weirhq/weir/state"
)

// The window operator's trigger path (Flink's WindowOperator with a
// Trigger): taken when the job set a trigger or an evictor (see
// WindowedStream.hasDefaultTrigger). Unlike the fast path, the trigger sees
// every element, and timers of any time and domain may be in a window's
// namespace.

// cleanupTime is when window w's state goes: Flink's cleanupTime, never for
// the global window (whose max timestamp is the end of time).
func (o *windowOp[K, T, R, U]) cleanupTime(w TimeWindow) int64 {
	if w == GlobalWindow {
		return math.MaxInt64
	}
	return window.CleanupTime(window.Window(w), o.lateness)
}

// elementWithTrigger adds v to window w (the current namespace) and does
// what the trigger says.
func (o *windowOp[K, T, R, U]) elementWithTrigger(v T, ts int64, w TimeWindow) {
	if o.evicting != nil {
		o.evicting.element(ts)
	}
	fresh := o.contents.add(v)
	o.tctx.window = w
	res := o.trigger.OnElement(v, ts, w, &o.tctx)
	if res.IsFire() {
		o.fireWindow(w)
	}
	if res.IsPurge() {
		o.contents.clear()
	}
	// Flink registers the cleanup timer with every element; contents that
	// were there already have it.
	if fresh || o.merging {
		o.registerCleanup(w)
	}
}

// mergeTrigger is Flink's merge callback for triggers: OnMerge on the
// merged window r (its contents are already there), then Clear and the
// cleanup timer's deletion for each window merged into it.
func (o *windowOp[K, T, R, U]) mergeTrigger(r TimeWindow, merged []TimeWindow) {
	o.tctx.window, o.tctx.merged = r, merged
	o.trigger.OnMerge(r, &o.tctx)
	o.tctx.merged = nil
	for _, m := range merged {
		o.setWindow(m)
		o.tctx.window = m
		o.trigger.Clear(m, &o.tctx)
		if t := o.cleanupTime(m); t != math.MaxInt64 {
			if o.eventTime {
				o.core.DeleteEventTimeTimer(t)
			} else {
				o.core.DeleteProcessingTimeTimer(t)
			}
		}
	}
	o.setWindow(r)
	o.tctx.window = r
}

// onTriggerTimer passes a timer to the trigger of the window its namespace
// names, fires and purges as it says, and cleans the window up at its
// cleanup time (the timer of the window's own domain).
func (o *windowOp[K, T, R, U]) onTriggerTimer(tm timers.Timer, eventTime bool) {
	w, sessions, ok := o.timerWindow(tm)
	if !ok {
		return
	}
	o.setWindow(w)
	o.tctx.window = w
	var res TriggerResult
	if eventTime {
		res = o.trigger.OnEventTime(tm.Timestamp, w, &o.tctx)
	} else {
		res = o.trigger.OnProcessingTime(tm.Timestamp, w, &o.tctx)
	}
	if res.IsFire() {
		o.fireWindow(w)
	}
	if res.IsPurge() {
		o.contents.clear()
	}
	if eventTime == o.eventTime && tm.Timestamp == o.cleanupTime(w) {
		o.contents.clear()
		o.trigger.Clear(w, &o.tctx)
		if o.merging {
			o.retireSession(w, sessions)
		}
	}
}

// triggerContext implements TriggerContext and OnMergeContext over the
// operator's keyed core; the operator sets the window (and its namespace)
// before each call.
type triggerContext[K comparable] struct {
	core      *keyedruntime.Core[K]
	setWindow func(TimeWindow)
	window    TimeWindow
	merged    []TimeWindow // during OnMerge
}

func (c *triggerContext[K]) CurrentWatermark() int64        { return c.core.CurrentWatermark() }
func (c *triggerContext[K]) CurrentProcessingTime() int64   { return c.core.CurrentProcessingTime() }
func (c *triggerContext[K]) RegisterEventTimeTimer(t int64) { c.core.RegisterEventTimeTimer(t) }
func (c *triggerContext[K]) DeleteEventTimeTimer(t int64)   { c.core.DeleteEventTimeTimer(t) }
func (c *triggerContext[K]) RegisterProcessingTimeTimer(t int64) {
	c.core.RegisterProcessingTimeTimer(t)
}
func (c *triggerContext[K]) DeleteProcessingTimeTimer(t int64) { c.core.DeleteProcessingTimeTimer(t) }
func (c *triggerContext[K]) State() state.KeyedStore           { return c.core.Store() }
func (c *triggerContext[K]) MergedWindows() []TimeWindow       { return c.merged }

func (c *triggerContext[K]) eachMergedWindow(fn func()) {
	for _, m := range c.merged {
		c.setWindow(m)
		fn()
	}
	c.setWindow(c.window)
}
