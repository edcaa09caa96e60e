package weir

import (
	"fmt"

	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
)

// The session fast path: event- or processing-time session windows (any
// merging assigner) with the default trigger. As Flink's MergingWindowSet,
// a merged session keeps the state namespace of one of the sessions it
// merged (its state window), so an element that falls inside or extends a
// session adds to that namespace: no contents move. Only a merge of two or
// more sessions moves contents, into the first one's state window.
//
// The key's "window-sessions" list (sessions sorted by start) keeps its
// type and encoding; a session whose state window is not the session
// itself is followed in it by a marker entry, the state window with start
// and end swapped (Start > End, which no window has). Lists without
// markers, as checkpoints written before this path hold, mean every state
// window is its session. Timers stay in the namespace of the session (the
// actual window), as Flink's.

// stateMarker is the list entry that names sw as the state window of the
// session before it.
func stateMarker(sw TimeWindow) TimeWindow { return TimeWindow{Start: sw.End, End: sw.Start} }

func isStateMarker(e TimeWindow) bool { return e.Start > e.End }

// stateWindowAt is the state window of the session at index i of a stored
// list.
func stateWindowAt(sessions []TimeWindow, i int) TimeWindow {
	if i+1 < len(sessions) && isStateMarker(sessions[i+1]) {
		m := sessions[i+1]
		return TimeWindow{Start: m.End, End: m.Start}
	}
	return sessions[i]
}

// sessionState returns the state window of session w in sessions, and
// whether w is one of them.
func sessionState(sessions []TimeWindow, w TimeWindow) (TimeWindow, bool) {
	for i, s := range sessions {
		if s == w {
			return stateWindowAt(sessions, i), true
		}
	}
	return w, false
}

// sessionHot is, on the heap backend, the current key's session list and
// the state window that is the current state namespace, as of the heap
// store's epoch: while the store's epoch is the same, so are the key and
// the namespace (nothing set either since), and the contents' table still
// caches the state window's entry. An element of the same key that falls
// inside the same session (most of them when a key's elements come in runs)
// then reads neither the session list nor the contents' entry again, and
// sets no namespace. The list is the stored one, which the heap backend
// never changes in place (writableSessions), so it is still the stored
// list while the epoch is the same: every write of the list sets the
// namespace first (nil), which changes the epoch.
type sessionHot struct {
	store    *typedstore.Store // nil: not the heap backend
	epoch    uint64            // store's epoch when set; 0 (no store epoch is): none
	sessions []TimeWindow
	state    TimeWindow
}

// remember notes, right after the state namespace became sw, that the
// current key's stored session list is l.
func (o *windowOp[K, T, R, U]) remember(l []TimeWindow, sw TimeWindow) {
	if h := &o.hot; h.store != nil {
		h.epoch, h.sessions, h.state = h.store.Epoch(), l, sw
	}
}

// storedSessions is the current key's session list as stored; read only.
// It makes the state namespace none (the timers' stays).
func (o *windowOp[K, T, R, U]) storedSessions() []TimeWindow {
	o.core.SetStateNamespace(nil)
	if t := o.sessTab; t != nil {
		if e := t.Lookup(); e != nil {
			return e.Val
		}
		return nil
	}
	l, _ := o.sessions.Value()
	return l
}

// writableSessions is a copy of the current key's session list cur (as
// storedSessions returned it) to change and pass to saveSessions, with
// room for one more entry: a new slice on the heap backend, whose stored
// list (read without Writable, which would copy it) a snapshot being
// written may still read; cur itself otherwise, a decoded copy.
func (o *windowOp[K, T, R, U]) writableSessions(cur []TimeWindow) []TimeWindow {
	if o.sessTab == nil && cur != nil {
		return cur
	}
	l := make([]TimeWindow, len(cur), max(len(cur)+1, 2))
	copy(l, cur)
	return l
}

func (o *windowOp[K, T, R, U]) saveSessions(l []TimeWindow) {
	if t := o.sessTab; t != nil {
		e, _ := t.Upsert()
		e.Val = l
		return
	}
	o.sessions.Update(l)
}

// sessionElement adds v, whose own window is w, to the current key's
// sessions on the fast path: w opens a session, falls inside one, extends
// one or merges several. False when w is a new, lone window that is
// already late (the element is then skipped, as Flink's).
func (o *windowOp[K, T, R, U]) sessionElement(v T, w TimeWindow, wm, now int64) bool {
	var cur []TimeWindow
	hot := o.hot.store != nil && o.hot.epoch == o.hot.store.Epoch()
	if hot {
		cur = o.hot.sessions
	} else {
		cur = o.storedSessions()
	}
	first, last, n := -1, -1, 0
	r := w
	for i, s := range cur {
		if isStateMarker(s) {
			continue
		}
		if s.Start > w.End {
			break // sorted by start: none further touches w
		}
		if s.End >= w.Start { // overlaps or touches (Flink's TimeWindow.intersects)
			if first < 0 {
				first = i
			}
			last, n = i, n+1
			r = TimeWindow{Start: min(r.Start, s.Start), End: max(r.End, s.End)}
		}
	}
	switch {
	case n == 0:
		if o.isLate(w, wm) {
			return false // a new, lone late window: never stored (Flink retires it)
		}
		l := o.writableSessions(cur)
		i := 0
		for i < len(l) && (isStateMarker(l[i]) || l[i].Start < w.Start) {
			i++
		}
		l = insertAt(l, i, w)
		if hot {
			o.core.SetStateNamespace(nil) // the list's
		}
		o.saveSessions(l)
		o.setWindow(w)
		o.remember(l, w)
		o.contents.add(v)
		o.onElement(w, wm)
		o.registerCleanupAfter(w, wm)
		return true
	case n == 1 && r == cur[first]:
		// Inside a session: its timers are there already.
		if sw := stateWindowAt(cur, first); !hot || sw != o.hot.state {
			o.setStateWindow(sw)
			o.remember(cur, sw)
		}
		o.contents.add(v)
		if o.eventTime && r.MaxTimestamp() <= wm {
			o.fireWindow(r) // a late firing
		}
		return true
	}
	if o.isLate(r, wm) {
		// Merging never moves a window's end back, so a merged window
		// is late only if a trigger failed to clean up: Flink fails too.
		operator.Fail(fmt.Errorf("window merging produced the late window %v at watermark %d", r, wm))
	}
	sw := stateWindowAt(cur, first)
	if n > 1 {
		// The others and their state windows, read before the list
		// changes (it may be cur).
		o.merged = o.merged[:0]
		for i := first + 1; i <= last; i++ {
			if !isStateMarker(cur[i]) {
				o.merged = append(o.merged, cur[i], stateWindowAt(cur, i))
			}
		}
	}
	old := cur[first]
	// The list: the merged sessions (and their markers) become r and the
	// marker of sw.
	l := o.writableSessions(cur)
	end := last + 1
	if end < len(l) && isStateMarker(l[end]) {
		end++
	}
	l[first] = r
	if sw != r {
		if end-first >= 2 {
			l[first+1] = stateMarker(sw)
			l = append(l[:first+2], l[end:]...)
		} else {
			l = insertAt(l, first+1, stateMarker(sw))
		}
	} else {
		l = append(l[:first+1], l[end:]...)
	}
	if hot {
		o.core.SetStateNamespace(nil) // the list's
	}
	o.saveSessions(l)
	if n > 1 {
		// Merge the others' contents into the first one's state window, in
		// session order (the order of the moving path's merge).
		o.raws = o.raws[:0]
		for i := 1; i < len(o.merged); i += 2 {
			o.setStateWindow(o.merged[i])
			if raw, ok := o.contents.take(); ok {
				o.raws = append(o.raws, raw)
			}
		}
		o.setStateWindow(sw)
		for _, raw := range o.raws {
			o.contents.absorb(raw)
		}
		clear(o.raws)
		for i := 0; i < len(o.merged); i += 2 {
			o.setTimerWindow(o.merged[i])
			o.deleteTimers(o.merged[i])
		}
	} else {
		o.setStateWindow(sw)
	}
	o.remember(l, sw)
	o.setTimerWindow(old)
	o.deleteTimers(old)
	o.contents.add(v)
	// The default trigger's onMerge and onElement for r, then its cleanup:
	// timers in r's namespace, contents in sw's.
	o.setTimerWindow(r)
	o.onMergedElement(r, wm)
	o.registerCleanupAfter(r, wm)
	return true
}

// registerCleanupAfter registers w's cleanup timer after onElement or
// onMergedElement registered its firing timer: nothing more when that is
// the same timer (no allowed lateness; the timer service would only find
// it there).
func (o *windowOp[K, T, R, U]) registerCleanupAfter(w TimeWindow, wm int64) {
	if o.cleanupTime(w) == w.MaxTimestamp() && (!o.eventTime || w.MaxTimestamp() > wm) {
		return
	}
	o.registerCleanup(w)
}

// onMergedElement registers the timer that fires the merged session r, or
// fires it at once when the watermark passed its end (r is the timers'
// namespace, its state window the state's).
func (o *windowOp[K, T, R, U]) onMergedElement(r TimeWindow, wm int64) {
	switch {
	case !o.eventTime:
		o.core.RegisterProcessingTimeTimer(r.MaxTimestamp())
	case r.MaxTimestamp() <= wm:
		o.fireWindow(r)
	default:
		o.core.RegisterEventTimeTimer(r.MaxTimestamp())
	}
}

// insertAt inserts e at index i of l, in place when l has room.
func insertAt(l []TimeWindow, i int, e TimeWindow) []TimeWindow {
	l = append(l, TimeWindow{})
	copy(l[i+1:], l[i:])
	l[i] = e
	return l
}
