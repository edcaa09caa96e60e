package barrier

import (
	"fmt"
	"slices"
)

// caller mirrors what a task does with the Actions it is given, in the
// documented order, and checks them against the protocol and against the
// Handler's own state. Both the golden traces and the randomized test run
// every step through it.
type caller struct {
	h           *Handler
	blocked     []bool
	recording   []bool
	recordingID int64 // the unaligned checkpoint whose channel state is being recorded; 0: none
	lastSnap    int64
	snapped     map[int64]Snapshot
	done        map[int64]bool
	canceled    map[int64]bool
}

func newCaller(h *Handler) *caller {
	n := len(h.channels)
	return &caller{
		h:         h,
		blocked:   make([]bool, n),
		recording: make([]bool, n),
		snapped:   map[int64]Snapshot{},
		done:      map[int64]bool{},
		canceled:  map[int64]bool{},
	}
}

// apply applies a, returned by a call at time now, and checks the step.
func (k *caller) apply(now int64, a Actions) error {
	h := k.h
	if err := h.checkInvariants(); err != nil {
		return fmt.Errorf("handler invariant: %v", err)
	}
	for i, c := range a.Cancel {
		if i > 0 && c.ID <= a.Cancel[i-1].ID {
			return fmt.Errorf("Cancel not in increasing id order: %v", a.Cancel)
		}
		if k.canceled[c.ID] {
			return fmt.Errorf("second Cancel for %d", c.ID)
		}
		if a.Snapshot != nil && c.ID >= a.Snapshot.ID {
			return fmt.Errorf("Cancel %d with Snapshot %d", c.ID, a.Snapshot.ID)
		}
		k.canceled[c.ID] = true
		if c.ID == k.recordingID {
			clear(k.recording)
			k.recordingID = 0
		}
	}
	if s := a.Snapshot; s != nil {
		if s.ID <= k.lastSnap {
			return fmt.Errorf("Snapshot %d after Snapshot %d", s.ID, k.lastSnap)
		}
		if k.canceled[s.ID] {
			return fmt.Errorf("Snapshot %d after its Cancel", s.ID)
		}
		k.lastSnap = s.ID
		k.snapped[s.ID] = *s
		if s.Unaligned {
			if h.mode != ExactlyOnce {
				return fmt.Errorf("unaligned Snapshot %d in %s", s.ID, h.mode)
			}
			if k.recordingID != 0 {
				return fmt.Errorf("Snapshot %d while still recording %d", s.ID, k.recordingID)
			}
			k.recordingID = s.ID
		} else if a.Done == nil || *a.Done != s.ID {
			return fmt.Errorf("aligned Snapshot %d without its Done", s.ID)
		}
	}
	if len(a.Record) > 0 && (a.Snapshot == nil || !a.Snapshot.Unaligned) {
		return fmt.Errorf("Record %v without an unaligned Snapshot", a.Record)
	}
	for _, c := range a.Record {
		if k.recording[c] || k.blocked[c] && !slices.Contains(a.Unblock, c) {
			return fmt.Errorf("Record %d: recording=%t blocked=%t", c, k.recording[c], k.blocked[c])
		}
		k.recording[c] = true
	}
	for _, c := range a.StopRecording {
		if !k.recording[c] {
			return fmt.Errorf("StopRecording %d, which is not recording", c)
		}
		k.recording[c] = false
	}
	if a.Done != nil {
		id := *a.Done
		if _, ok := k.snapped[id]; !ok {
			return fmt.Errorf("Done %d before its Snapshot", id)
		}
		if k.done[id] || k.canceled[id] {
			return fmt.Errorf("Done %d: done=%t canceled=%t", id, k.done[id], k.canceled[id])
		}
		k.done[id] = true
		if id == k.recordingID {
			if slices.Contains(k.recording, true) {
				return fmt.Errorf("Done %d with channels still recording %v", id, k.recording)
			}
			k.recordingID = 0
		}
	}
	if len(a.Block) > 0 && h.mode != ExactlyOnce {
		return fmt.Errorf("Block %v in %s", a.Block, h.mode)
	}
	for _, c := range a.Block {
		if k.blocked[c] || slices.Contains(a.Unblock, c) {
			return fmt.Errorf("Block %d: blocked=%t, unblocked=%v", c, k.blocked[c], a.Unblock)
		}
		k.blocked[c] = true
	}
	for _, c := range a.Unblock {
		if !k.blocked[c] {
			return fmt.Errorf("Unblock %d, which is not blocked", c)
		}
		k.blocked[c] = false
	}
	if a.AlignmentStart != 0 && a.AlignmentStart != now {
		return fmt.Errorf("AlignmentStart %d at %d", a.AlignmentStart, now)
	}
	var wantWake int64
	if h.phase == aligning && h.cur.AlignedTimeout > 0 {
		if h.timedOut(now) {
			return fmt.Errorf("still aligning %d at %d past its timeout", h.cur.ID, now)
		}
		wantWake = h.deadline()
	}
	if a.WakeAt != wantWake {
		return fmt.Errorf("WakeAt %d, want %d", a.WakeAt, wantWake)
	}
	// The caller's view is the Handler's.
	for i := range h.channels {
		c := &h.channels[i]
		if c.blocked != k.blocked[i] || c.recording != k.recording[i] {
			return fmt.Errorf("channel %d: handler blocked=%t recording=%t, caller blocked=%t recording=%t",
				i, c.blocked, c.recording, k.blocked[i], k.recording[i])
		}
	}
	var wantRec int64
	if h.phase == recording {
		wantRec = h.cur.ID
	}
	if k.recordingID != wantRec {
		return fmt.Errorf("caller records channel state of %d, handler of %d", k.recordingID, wantRec)
	}
	if h.mode == AtLeastOnce && len(h.pending) > 0 && h.pending[0].id <= k.lastSnap {
		return fmt.Errorf("checkpoint %d still tracked after Snapshot %d", h.pending[0].id, k.lastSnap)
	}
	return nil
}

// format prints the set fields of a in the order the caller applies them.
func format(a Actions) []string {
	var out []string
	for _, c := range a.Cancel {
		out = append(out, fmt.Sprintf("cancel %d: %s", c.ID, c.Reason))
	}
	if s := a.Snapshot; s != nil {
		kind := "aligned"
		if s.Unaligned {
			kind = "unaligned"
		}
		line := fmt.Sprintf("snapshot %d %s ts=%d", s.ID, kind, s.Timestamp)
		if s.AlignedTimeout != 0 {
			line += fmt.Sprintf(" timeout=%d", s.AlignedTimeout)
		}
		out = append(out, line)
	}
	list := func(name string, cs []int) {
		if len(cs) > 0 {
			out = append(out, fmt.Sprintf("%s %v", name, cs))
		}
	}
	list("record", a.Record)
	list("stop-recording", a.StopRecording)
	if a.Done != nil {
		out = append(out, fmt.Sprintf("done %d", *a.Done))
	}
	list("block", a.Block)
	list("unblock", a.Unblock)
	if a.AlignmentStart != 0 {
		out = append(out, fmt.Sprintf("alignment-start %d", a.AlignmentStart))
	}
	if a.WakeAt != 0 {
		out = append(out, fmt.Sprintf("wake-at %d", a.WakeAt))
	}
	if len(out) == 0 {
		out = append(out, "(nothing)")
	}
	return out
}
