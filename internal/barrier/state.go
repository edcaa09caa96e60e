package barrier

import (
	"errors"
	"fmt"
	"strings"
)

// String describes the Handler's state on one line, for logs and traces:
//
//	idle latest=2
//	aligning id=3 received=[0 2] blocked=[0 2]
//	recording id=3 received=[0] recording=[1 2]
//	tracking latest=3 pending=[2 received=[0], 3 aborted received=[1]]
//
// followed by " ended=[...]" when channels have ended.
func (h *Handler) String() string {
	var b strings.Builder
	if h.mode == AtLeastOnce {
		fmt.Fprintf(&b, "tracking latest=%d pending=[", h.latest)
		for i, t := range h.pending {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d ", t.id)
			if t.aborted {
				b.WriteString("aborted ")
			}
			b.WriteString("received=")
			writeSet(&b, len(t.received), func(i int) bool { return t.received[i] })
		}
		b.WriteString("]")
	} else {
		switch h.phase {
		case idle:
			fmt.Fprintf(&b, "idle latest=%d", h.latest)
		case aligning:
			fmt.Fprintf(&b, "aligning id=%d received=", h.cur.ID)
			h.writeChannels(&b, func(c *channel) bool { return c.received })
			b.WriteString(" blocked=")
			h.writeChannels(&b, func(c *channel) bool { return c.blocked })
		case recording:
			fmt.Fprintf(&b, "recording id=%d received=", h.cur.ID)
			h.writeChannels(&b, func(c *channel) bool { return c.received })
			b.WriteString(" recording=")
			h.writeChannels(&b, func(c *channel) bool { return c.recording })
		}
	}
	if h.live < len(h.channels) {
		b.WriteString(" ended=")
		h.writeChannels(&b, func(c *channel) bool { return c.ended })
	}
	return b.String()
}

func (h *Handler) writeChannels(b *strings.Builder, in func(*channel) bool) {
	writeSet(b, len(h.channels), func(i int) bool { return in(&h.channels[i]) })
}

func writeSet(b *strings.Builder, n int, in func(int) bool) {
	b.WriteString("[")
	first := true
	for i := range n {
		if in(i) {
			if !first {
				b.WriteString(" ")
			}
			first = false
			fmt.Fprint(b, i)
		}
	}
	b.WriteString("]")
}

// checkInvariants returns an error describing the first broken invariant of
// the Handler's state. Tests call it after every step.
func (h *Handler) checkInvariants() error {
	live := 0
	for i := range h.channels {
		if !h.channels[i].ended {
			live++
		}
	}
	if live != h.live {
		return fmt.Errorf("live=%d, but %d channels have not ended", h.live, live)
	}
	if len(h.canceled) > maxRemembered {
		return fmt.Errorf("%d canceled ids remembered, bound %d", len(h.canceled), maxRemembered)
	}
	if h.mode == AtLeastOnce {
		return h.checkTracker()
	}
	if len(h.pending) > 0 {
		return errors.New("exactly-once handler tracks checkpoints")
	}
	if h.phase != idle && h.cur.ID != h.latest {
		return fmt.Errorf("%s checkpoint %d, but latest is %d", h.phase, h.cur.ID, h.latest)
	}
	missing := 0
	for i := range h.channels {
		c := &h.channels[i]
		switch {
		case h.phase == idle && (c.received || c.blocked || c.recording):
			return fmt.Errorf("idle, but channel %d is received=%t blocked=%t recording=%t", i, c.received, c.blocked, c.recording)
		case c.blocked && (h.phase != aligning || !c.received || c.ended):
			return fmt.Errorf("channel %d blocked while %s, received=%t ended=%t", i, h.phase, c.received, c.ended)
		case c.recording && (h.phase != recording || c.received || c.ended):
			return fmt.Errorf("channel %d recording while %s, received=%t ended=%t", i, h.phase, c.received, c.ended)
		case h.phase == recording && !c.received && !c.ended && !c.recording:
			return fmt.Errorf("channel %d neither received nor recording while recording", i)
		case h.phase == aligning && c.received && !c.blocked && !c.ended:
			return fmt.Errorf("channel %d received but not blocked while aligning", i)
		}
		if !c.received && !c.ended {
			missing++
		}
	}
	if h.phase != idle {
		if missing != h.missing {
			return fmt.Errorf("missing=%d, but %d live channels have not delivered %d", h.missing, missing, h.cur.ID)
		}
		if h.missing == 0 {
			return fmt.Errorf("still %s checkpoint %d with every channel delivered", h.phase, h.cur.ID)
		}
	}
	if h.phase != idle && (h.phase == recording) != h.cur.Unaligned {
		return fmt.Errorf("%s, but cur.Unaligned=%t", h.phase, h.cur.Unaligned)
	}
	return nil
}

func (h *Handler) checkTracker() error {
	if h.phase != idle {
		return fmt.Errorf("at-least-once handler is %s", h.phase)
	}
	if len(h.pending) > h.maxTracked {
		return fmt.Errorf("%d checkpoints tracked, bound %d", len(h.pending), h.maxTracked)
	}
	for i := range h.channels {
		if c := &h.channels[i]; c.received || c.blocked || c.recording {
			return fmt.Errorf("at-least-once channel %d is received=%t blocked=%t recording=%t", i, c.received, c.blocked, c.recording)
		}
	}
	for i, t := range h.pending {
		if t.id > h.latest || (i > 0 && t.id <= h.pending[i-1].id) {
			return fmt.Errorf("tracked ids out of order or above latest %d at %d", h.latest, t.id)
		}
		missing := 0
		for c := range h.channels {
			if !t.received[c] && !h.channels[c].ended {
				missing++
			}
		}
		if missing != t.missing || missing == 0 {
			return fmt.Errorf("checkpoint %d: missing=%d, counted %d", t.id, t.missing, missing)
		}
		// Nothing older than t that a channel has passed is still tracked.
		for _, older := range h.pending[:i] {
			for c := range h.channels {
				if t.received[c] && !older.received[c] && !h.channels[c].ended {
					return fmt.Errorf("checkpoint %d still tracked though channel %d passed it for %d", older.id, c, t.id)
				}
			}
		}
	}
	return nil
}
