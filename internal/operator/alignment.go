package operator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/internal/watermark"
	"github.com/weirhq/weir/source"
)

// Watermark alignment (Flink's WatermarkStrategy.withWatermarkAlignment):
// the source operators of a group report their watermark to their
// coordinator every update interval; the coordinators of the group share
// one decision (internal/watermark.Alignment) and answer each report with
// the largest watermark the group allows (its minimum + max drift). A
// source whose watermark is beyond stops polling its reader until allowed
// again, and, if its reader implements source.SplitPauser, splits whose
// own watermark is beyond are paused.
//
// Flink's coordinator announces on a timer of its own to every reader;
// Weir answers each report instead, so a reader learns the allowed
// watermark at its own report interval without coordinator timers, and
// events stay one per report each way (each at most 12 bytes).

// Events of alignment, beside those of source.go.
const (
	eventWatermarkReport  byte = 'W' // reader -> coordinator: status byte, varint watermark
	eventAllowedWatermark byte = 'L' // coordinator -> reader: varint allowed watermark
)

// A report's status byte.
const (
	reportActive byte = iota
	reportIdle
	reportFinished
)

// maxReportLen bounds a report: type, status and a varint int64.
const maxReportLen = 2 + binary.MaxVarintLen64

// MinAlignmentInterval is the shortest update interval (ms): each report
// is an event to the JobManager and one back.
const MinAlignmentInterval = 10

// MaxAlignmentGroupLen bounds a group's name (bytes).
const MaxAlignmentGroupLen = 256

// Alignment is a watermarked source's alignment setting.
type Alignment struct {
	// Group names the alignment group; sources of a job with one group
	// name are aligned together.
	Group string
	// MaxDrift (ms, >= 0) is how far a source's watermark may go beyond
	// the group's minimum.
	MaxDrift int64
	// Interval (ms, >= MinAlignmentInterval) between reports.
	Interval int64
}

func (a Alignment) validate() error {
	switch {
	case a.Group == "":
		return errors.New("watermark alignment: the group name is empty")
	case len(a.Group) > MaxAlignmentGroupLen:
		return fmt.Errorf("watermark alignment: the group name is %d bytes, more than %d", len(a.Group), MaxAlignmentGroupLen)
	case a.MaxDrift < 0:
		return fmt.Errorf("watermark alignment group %q: the max drift is %d ms; it must be 0 or more", a.Group, a.MaxDrift)
	case a.Interval < MinAlignmentInterval:
		return fmt.Errorf("watermark alignment group %q: the update interval is %d ms; it must be at least %d ms", a.Group, a.Interval, MinAlignmentInterval)
	}
	return nil
}

// alignmentGroup is the decision the coordinators of a group's sources
// share (opcoordinator.Context.Shared).
type alignmentGroup struct {
	name     string
	maxDrift int64
	decision *watermark.Alignment
	sources  int // sources joined, for reader ids
}

// alignedCoordinator is a source coordinator's part in its group.
type alignedCoordinator struct {
	group *alignmentGroup
	ids   []string // reader id in the group, per subtask
}

// joinAlignment joins the group a names, pre-registering every reader
// subtask at the minimum: until a reader reports, it holds the group back
// (otherwise a source whose readers start first runs ahead of one whose
// readers have not started yet).
func joinAlignment(ctx opcoordinator.Context, a Alignment) (*alignedCoordinator, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	g := ctx.Shared("watermark-alignment/"+a.Group, func() any {
		return &alignmentGroup{name: a.Group, maxDrift: a.MaxDrift, decision: watermark.NewAlignment(a.MaxDrift)}
	}).(*alignmentGroup)
	if g.maxDrift != a.MaxDrift {
		return nil, fmt.Errorf("watermark alignment group %q: one source allows a drift of %d ms, another %d ms; the sources of a group must allow the same", a.Group, g.maxDrift, a.MaxDrift)
	}
	src := g.sources
	g.sources++
	c := &alignedCoordinator{group: g}
	for i := range ctx.Parallelism() {
		id := fmt.Sprintf("%d/%d", src, i)
		c.ids = append(c.ids, id)
		g.decision.Report(id, math.MinInt64)
	}
	return c, nil
}

// report handles a reader's report and answers it with the allowed
// watermark.
func (c *alignedCoordinator) report(ctx opcoordinator.Context, subtask int, p []byte) error {
	if subtask < 0 || subtask >= len(c.ids) {
		return fmt.Errorf("watermark alignment group %q: a report from subtask %d of %d", c.group.name, subtask, len(c.ids))
	}
	if len(p) < 2 || len(p) > maxReportLen-1 {
		return fmt.Errorf("watermark alignment group %q: a report of %d bytes from subtask %d", c.group.name, len(p), subtask)
	}
	wm, k := binary.Varint(p[1:])
	if k <= 0 || 1+k != len(p) {
		return fmt.Errorf("watermark alignment group %q: a corrupt report from subtask %d", c.group.name, subtask)
	}
	id, d := c.ids[subtask], c.group.decision
	switch p[0] {
	case reportActive:
		d.Report(id, wm)
	case reportIdle:
		d.Idle(id)
	case reportFinished:
		d.Finished(id)
	default:
		return fmt.Errorf("watermark alignment group %q: a report with unknown status %d from subtask %d", c.group.name, p[0], subtask)
	}
	// Every report is answered, also with an unchanged value: an answer
	// may be lost (the JobManager drops events to a subtask it does not
	// know yet), and a source waits for its first one before it reads.
	// A new slice per answer: SendEvent hands it to the subtask, which
	// reads it later on its own goroutine.
	ans := binary.AppendVarint(append(make([]byte, 0, 1+binary.MaxVarintLen64), eventAllowedWatermark), d.Allowed())
	ctx.SendEvent(subtask, ans)
	return nil
}

// alignState is a watermarked source's side of alignment.
type alignState struct {
	cfg        Alignment
	nextReport int64
	// allowed is the group's last answer; until the first (announced),
	// the source does not poll.
	allowed   int64
	announced bool
	wm        int64 // the source's watermark (the valve's output)
	idle      bool  // the source's output is idle
	finished  bool  // the end was reported
	// Split pausing, when the reader implements source.SplitPauser:
	// dirty is set when a split's watermark or the allowed one moved.
	pauser        source.SplitPauser
	dirty         bool
	pause, resume []string
	buf           []byte
}

// blocked reports whether the source must not poll its reader now.
func (a *alignState) blocked() bool {
	return !a.announced || watermark.ShouldPause(a.wm, a.allowed)
}

// sendReport reports the source's watermark and status to the group.
func (w *watermarkedSource[T, S]) sendReport() {
	a := w.align
	st := reportActive
	switch {
	case w.ended:
		st = reportFinished
		a.finished = true
	case a.idle || (w.polled && len(w.all) == 0):
		// Idle, or without any split after a poll (a reader makes its
		// splits' outputs when it polls): it holds nothing back.
		st = reportIdle
	}
	a.buf = binary.AppendVarint(append(a.buf[:0], eventWatermarkReport, st), a.wm)
	w.ctx.SendEvent(a.buf)
}

// onAllowed handles the group's answer.
func (w *watermarkedSource[T, S]) onAllowed(p []byte) error {
	a := w.align
	if a == nil {
		return errors.New("source: an allowed watermark for a source without watermark alignment")
	}
	wm, k := binary.Varint(p)
	if k <= 0 || k != len(p) {
		return errors.New("source: a corrupt allowed watermark from the alignment group")
	}
	if !a.announced || wm != a.allowed {
		a.announced, a.allowed, a.dirty = true, wm, true
		w.blocked = a.blocked()
		w.checkSplits()
	}
	return nil
}

// checkSplits pauses the splits whose watermark is beyond the allowed one
// and resumes those no longer beyond it (the reader must implement
// source.SplitPauser). It runs when something moved, at most once a poll
// or an answer, over the live splits.
func (w *watermarkedSource[T, S]) checkSplits() {
	a := w.align
	if a.pauser == nil || !a.dirty || !a.announced {
		return
	}
	a.dirty = false
	a.pause, a.resume = a.pause[:0], a.resume[:0]
	for id, o := range w.splits {
		p := watermark.ShouldPause(o.emitted, a.allowed)
		if p == o.paused {
			continue
		}
		o.paused = p
		if p {
			a.pause = append(a.pause, id)
		} else {
			a.resume = append(a.resume, id)
		}
	}
	if len(a.pause)+len(a.resume) > 0 {
		a.pauser.PauseOrResumeSplits(a.pause, a.resume)
	}
}
