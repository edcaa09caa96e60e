package watermark

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Alignment is the JobManager's decision for one watermark alignment group
// (Flink's withWatermarkAlignment(group, maxDrift, updateInterval)): the
// readers of the group (source subtasks, or their splits, possibly of
// several sources of a job) report their current watermark at the update
// interval, and every reader may go up to the minimum over the group plus
// maxDrift; one whose watermark is beyond it pauses until allowed again.
//
// Idle and finished readers leave the minimum, so a group cannot deadlock
// on a reader that emits nothing: when no reader counts, nothing is held
// back. A reader that reports again after being idle counts again. It is
// pure: the coordinator feeds it reports and announces Allowed.
//
// The source coordinators of a group share one (internal/operator,
// alignment.go; docs/windows.md decision 27).
type Alignment struct {
	maxDrift int64
	readers  map[string]alignedReader
}

type alignedReader struct {
	wm             int64
	idle, finished bool
}

// NewAlignment returns the decision of a group allowing maxDrift ms.
func NewAlignment(maxDrift int64) *Alignment {
	return &Alignment{maxDrift: maxDrift, readers: map[string]alignedReader{}}
}

// Report records reader id's current watermark; it makes an idle reader
// count again. Reports of a finished reader are ignored.
func (a *Alignment) Report(id string, wm int64) {
	r := a.readers[id]
	if r.finished {
		return
	}
	r.wm, r.idle = wm, false
	a.readers[id] = r
}

// Idle says reader id is idle: it leaves the minimum until it reports.
func (a *Alignment) Idle(id string) {
	r, ok := a.readers[id]
	if !ok {
		r.wm = math.MinInt64
	}
	if !r.finished {
		r.idle = true
	}
	a.readers[id] = r
}

// Finished says reader id ended: it leaves the minimum for good.
func (a *Alignment) Finished(id string) {
	r := a.readers[id]
	r.finished = true
	a.readers[id] = r
}

// Remove forgets reader id (its subtask restarts and registers again).
func (a *Alignment) Remove(id string) { delete(a.readers, id) }

// Allowed is the largest watermark a reader of the group may reach: the
// minimum over readers that count, plus maxDrift (saturating); the maximum
// when none counts.
func (a *Alignment) Allowed() int64 {
	lo, any := int64(math.MaxInt64), false
	for _, r := range a.readers {
		if !r.idle && !r.finished {
			lo, any = min(lo, r.wm), true
		}
	}
	if !any || lo > math.MaxInt64-a.maxDrift {
		return math.MaxInt64
	}
	return lo + a.maxDrift
}

// ShouldPause reports whether a reader at watermark wm must pause.
func ShouldPause(wm, allowed int64) bool { return wm > allowed }

// String lists the readers in id order, for traces.
func (a *Alignment) String() string {
	ids := make([]string, 0, len(a.readers))
	for id := range a.readers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "allowed=%s", fmtWM(a.Allowed()))
	for _, id := range ids {
		r := a.readers[id]
		st := "active"
		switch {
		case r.finished:
			st = "finished"
		case r.idle:
			st = "idle"
		}
		fmt.Fprintf(&b, " %s=%s/%s", id, fmtWM(r.wm), st)
	}
	return b.String()
}
