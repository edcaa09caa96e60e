package watermark

import (
	"fmt"
	"math"
	"strings"
)

// Valve combines the watermarks and statuses of a set of channels, following
// Flink's StatusWatermarkValve:
//
//   - The output watermark is the minimum over the aligned channels, and it
//     only moves forward. A channel is aligned when it is active, has not
//     ended, and its watermark has reached the output watermark.
//   - An idle channel leaves the minimum. When it becomes active again
//     (ACTIVE, a watermark or records) it stays out of the minimum until its
//     watermark catches up with the output, so the output never goes back.
//   - When every channel that has not ended is idle, the output first takes
//     the largest watermark of those channels (nothing more will come from
//     them until they wake up, so nothing holds it back), then goes idle.
//     The first channel to become active makes it active again.
//   - An ended channel leaves the minimum for good; the end of a bounded
//     input arrives as the maximum watermark before the end.
//
// It is pure: callers apply the Result it returns (see Result.Apply order).
type Valve struct {
	chans   []channel
	current int64
	idle    bool
}

type channel struct {
	wm                   int64
	idle, ended, aligned bool
}

// Result says what the output must do after a step. Apply in this order:
// ACTIVE if Status && !Idle, then the watermark if Advanced, then IDLE if
// Status && Idle (a watermark is never emitted while idle).
type Result struct {
	Watermark int64
	Advanced  bool
	Status    bool // the output status changed to Idle
	Idle      bool
}

// NewValve returns a valve of n active channels at the minimum watermark.
func NewValve(n int) *Valve {
	v := &Valve{current: math.MinInt64}
	for range n {
		v.Add()
	}
	return v
}

// Add adds a channel and returns its index. A new channel is active,
// aligned, and at the minimum watermark: it holds the output back until it
// catches up (a new source split may hold old events). An ended slot is
// reused.
func (v *Valve) Add() (int, Result) {
	fresh := channel{wm: math.MinInt64, aligned: true}
	i := -1
	for k := range v.chans {
		if v.chans[k].ended {
			i = k
			break
		}
	}
	if i < 0 {
		v.chans = append(v.chans, fresh)
		i = len(v.chans) - 1
	} else {
		v.chans[i] = fresh
	}
	var r Result
	if v.idle {
		v.idle, r.Status = false, true
	}
	r.Watermark = v.current
	return i, r
}

// Channels is the number of channel slots (ended ones included).
func (v *Valve) Channels() int { return len(v.chans) }

// Current is the output watermark; IsIdle the output status.
func (v *Valve) Current() int64 { return v.current }

// OutputIdle reports whether the output is idle.
func (v *Valve) OutputIdle() bool { return v.idle }

// ChannelIdle reports whether channel ch is idle (the task checks it per
// data buffer: records on an idle channel make it active).
func (v *Valve) ChannelIdle(ch int) bool { return v.chans[ch].idle }

// Live is the number of channels that have not ended.
func (v *Valve) Live() int {
	n := 0
	for _, c := range v.chans {
		if !c.ended {
			n++
		}
	}
	return n
}

// Watermark records channel ch's watermark. On an idle channel it first
// makes the channel active. Watermarks of an ended channel are ignored.
func (v *Valve) Watermark(ch int, wm int64) Result {
	c := &v.chans[ch]
	if c.ended {
		return Result{Watermark: v.current}
	}
	var r Result
	if c.idle {
		r = v.Active(ch)
	}
	if wm > c.wm {
		c.wm = wm
	}
	if !c.aligned && c.wm >= v.current {
		c.aligned = true
	}
	v.advance(&r)
	return r
}

// Active marks channel ch active (an ACTIVE status, or records on it).
func (v *Valve) Active(ch int) Result {
	c := &v.chans[ch]
	r := Result{Watermark: v.current}
	if c.ended || !c.idle {
		return r
	}
	c.idle = false
	c.aligned = c.wm >= v.current
	if v.idle {
		v.idle, r.Status = false, true
	}
	v.advance(&r)
	return r
}

// Idle marks channel ch idle.
func (v *Valve) Idle(ch int) Result {
	c := &v.chans[ch]
	r := Result{Watermark: v.current}
	if c.ended || c.idle {
		return r
	}
	c.idle, c.aligned = true, false
	v.settle(&r)
	return r
}

// End removes channel ch from the minimum for good.
func (v *Valve) End(ch int) Result {
	c := &v.chans[ch]
	r := Result{Watermark: v.current}
	if c.ended {
		return r
	}
	*c = channel{wm: c.wm, ended: true}
	v.settle(&r)
	return r
}

// settle follows a channel leaving the minimum: when every live channel is
// idle the output flushes their largest watermark and goes idle; otherwise
// the minimum over the rest may advance.
func (v *Valve) settle(r *Result) {
	live, allIdle, hi := 0, true, int64(math.MinInt64)
	for _, c := range v.chans {
		if c.ended {
			continue
		}
		live++
		hi = max(hi, c.wm)
		allIdle = allIdle && c.idle
	}
	if live > 0 && allIdle {
		if hi > v.current {
			v.current, r.Watermark, r.Advanced = hi, hi, true
		}
		if !v.idle {
			v.idle, r.Status, r.Idle = true, true, true
		}
		return
	}
	v.advance(r)
}

// advance moves the output to the minimum over aligned channels if larger.
func (v *Valve) advance(r *Result) {
	lo, any := int64(math.MaxInt64), false
	for _, c := range v.chans {
		if c.aligned {
			lo, any = min(lo, c.wm), true
		}
	}
	if any && lo > v.current {
		v.current, r.Watermark, r.Advanced = lo, lo, true
	}
}

// String renders the valve for traces: output, then each channel.
func (v *Valve) String() string {
	var b strings.Builder
	st := "active"
	if v.idle {
		st = "idle"
	}
	fmt.Fprintf(&b, "out=%s %s", fmtWM(v.current), st)
	for i, c := range v.chans {
		s := "active"
		switch {
		case c.ended:
			s = "ended"
		case c.idle:
			s = "idle"
		case !c.aligned:
			s = "unaligned"
		}
		fmt.Fprintf(&b, " ch%d=%s/%s", i, fmtWM(c.wm), s)
	}
	return b.String()
}

func fmtWM(w int64) string {
	switch w {
	case math.MinInt64:
		return "min"
	case math.MaxInt64:
		return "max"
	}
	return fmt.Sprint(w)
}
