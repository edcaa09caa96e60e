package barrier

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// TestRandom drives Handlers with random channel contents and checks them
// against what a checkpoint must contain. Each channel is a FIFO of data
// buffers, barriers (in increasing id order, some skipped), cancel markers and
// perhaps an end of partition; a simulated task takes items from channels it
// has not blocked, ticks the timer, sometimes aborts, and applies the Actions
// through caller (protocol and invariants). On top of that it checks:
//
//   - exactly-once aligned Snapshot(n): every channel has given the task
//     exactly its data before barrier n (or all of it, if it ended), which
//     also proves no data was taken from a blocked channel;
//   - unaligned Snapshot(n): exactly the channels that have not reached
//     barrier n are recorded, and at Done(n) the data taken before the
//     snapshot plus the recorded data is, per channel, exactly the data
//     before barrier n; a channel stops recording right at its barrier;
//   - at-least-once Snapshot(n): every channel has delivered barrier n or
//     ended;
//   - liveness, when the task does not abort: a checkpoint that every
//     channel delivers (or ends before) gets its Snapshot, if it is aligned
//     without timeout (exactly-once) or in any case (at-least-once, where
//     an end of partition completing several at once snapshots only the
//     newest and cancels the others in the same step); and once
//     every channel has ended and been drained, nothing is pending.
func TestRandom(t *testing.T) {
	rng := testseed.Rand(t, 0)
	runs := 4000
	if testing.Short() {
		runs = 500
	}
	for i := range runs {
		r := newRandomRun(rng)
		if err := r.run(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, r.describe())
		}
	}
}

type itemKind int

const (
	data itemKind = iota
	barrierItem
	cancelItem
	endItem
)

type item struct {
	kind      itemKind
	id        int64
	unaligned bool // barrierItem: sent unaligned (upstream timed out, or unaligned checkpoint)
}

func (it item) String() string {
	switch it.kind {
	case data:
		return "d"
	case barrierItem:
		if it.unaligned {
			return fmt.Sprintf("b%du", it.id)
		}
		return fmt.Sprintf("b%d", it.id)
	case cancelItem:
		return fmt.Sprintf("c%d", it.id)
	}
	return "end"
}

type spec struct {
	ts, timeout int64
	unaligned   bool
}

type randomRun struct {
	rng        *rand.Rand
	mode       Mode
	maxTracked int // 0: default
	aborts     bool
	specs      []spec // by id; specs[0] unused
	items      [][]item
	// term[c][n] is the index in items[c] of the first barrier or cancel
	// marker with id >= n, or of the end; len(items[c]) if none. pre[c][n]
	// counts the data before it.
	term, pre [][]int
	log       []string
}

func newRandomRun(rng *rand.Rand) *randomRun {
	r := &randomRun{rng: rng, mode: Mode(rng.IntN(2)), aborts: rng.IntN(2) == 0}
	if r.mode == AtLeastOnce && rng.IntN(10) == 0 {
		r.maxTracked = 1 + rng.IntN(3)
	}
	n := 1 + rng.IntN(4)
	k := 1 + rng.IntN(20)
	r.specs = make([]spec, k+1)
	ts := int64(1000)
	for id := 1; id <= k; id++ {
		ts += 1 + rng.Int64N(15)
		s := spec{ts: ts, unaligned: rng.IntN(4) == 0}
		if rng.IntN(3) == 0 {
			s.timeout = 1 + rng.Int64N(25)
		}
		r.specs[id] = s
	}
	pBarrier := 60 + rng.IntN(40)
	pCancel := rng.IntN(10)
	pEnd := rng.IntN(8)
	r.items = make([][]item, n)
	for c := range r.items {
		var its []item
		ended := false
		for id := 1; id <= k && !ended; id++ {
			for range rng.IntN(4) {
				its = append(its, item{kind: data})
			}
			switch p := rng.IntN(100); {
			case p < pBarrier:
				s := r.specs[id]
				its = append(its, item{kind: barrierItem, id: int64(id),
					unaligned: s.unaligned || s.timeout > 0 && rng.IntN(5) == 0})
			case p < pBarrier+pCancel:
				its = append(its, item{kind: cancelItem, id: int64(id)})
			}
			if rng.IntN(100) < pEnd {
				its = append(its, item{kind: endItem})
				ended = true
			}
		}
		if !ended {
			for range rng.IntN(4) {
				its = append(its, item{kind: data})
			}
			if rng.IntN(100) < 85 {
				its = append(its, item{kind: endItem})
			}
		}
		r.items[c] = its
	}
	r.term = make([][]int, n)
	r.pre = make([][]int, n)
	for c, its := range r.items {
		r.term[c] = make([]int, k+1)
		r.pre[c] = make([]int, k+1)
		for id := 1; id <= k; id++ {
			i, d := 0, 0
			for ; i < len(its); i++ {
				it := its[i]
				if it.kind == endItem || it.kind != data && it.id >= int64(id) {
					break
				}
				if it.kind == data {
					d++
				}
			}
			r.term[c][id], r.pre[c][id] = i, d
		}
	}
	return r
}

// delivered reports whether channel c delivers barrier n or ends before any
// later id.
func (r *randomRun) delivered(c int, n int64) bool {
	i := r.term[c][n]
	if i == len(r.items[c]) {
		return false
	}
	it := r.items[c][i]
	return it.kind == endItem || it.kind == barrierItem && it.id == n
}

func (r *randomRun) describe() string {
	s := fmt.Sprintf("mode=%s maxTracked=%d aborts=%t\nspecs:", r.mode, r.maxTracked, r.aborts)
	for id := 1; id < len(r.specs); id++ {
		sp := r.specs[id]
		s += fmt.Sprintf(" %d{ts=%d timeout=%d unaligned=%t}", id, sp.ts, sp.timeout, sp.unaligned)
	}
	for c, its := range r.items {
		s += fmt.Sprintf("\nchannel %d: %v", c, its)
	}
	s += "\nsteps:"
	for _, l := range r.log {
		s += "\n  " + l
	}
	return s
}

func (r *randomRun) run() error {
	n := len(r.items)
	h := New(n, r.mode)
	if r.maxTracked > 0 {
		h.maxTracked = r.maxTracked
	}
	k := newCaller(h)
	var (
		pos          = make([]int, n)
		consumed     = make([]int, n)
		snapConsumed = make([]int, n) // consumed at the unaligned Snapshot of recID
		recorded     = make([]int, n) // data recorded as channel state of recID
		recID        int64
		now          = int64(1000)
		wake         int64
		subsumed     = map[int64]bool{} // canceled along with a newer Snapshot
		flagged      = map[int64]bool{} // an unaligned barrier of the id was taken
	)
	rng := r.rng
	// step checks and applies the Actions of one call; ch is the channel an
	// item was just taken from (-1 for Tick and Abort).
	step := func(what string, ch int, a Actions) error {
		r.log = append(r.log, fmt.Sprintf("%d %s -> %v | %s", now, what, format(a), h))
		for _, c := range a.Cancel {
			if c.ID == recID {
				recID = 0
			}
		}
		if s := a.Snapshot; s != nil {
			for _, c := range a.Cancel {
				subsumed[c.ID] = true
			}
			switch {
			case r.mode == AtLeastOnce:
				for c := range n {
					if !r.delivered(c, s.ID) || pos[c] <= r.term[c][s.ID] {
						return fmt.Errorf("Snapshot %d, but channel %d has not delivered it", s.ID, c)
					}
				}
			case !s.Unaligned:
				for c := range n {
					if !r.delivered(c, s.ID) || pos[c] != r.term[c][s.ID]+1 || consumed[c] != r.pre[c][s.ID] {
						return fmt.Errorf("aligned Snapshot %d: channel %d at item %d (barrier at %d), took %d data, %d before the barrier",
							s.ID, c, pos[c], r.term[c][s.ID], consumed[c], r.pre[c][s.ID])
					}
				}
			default:
				if sp := r.specs[s.ID]; !sp.unaligned && !flagged[s.ID] && now-sp.ts <= sp.timeout {
					return fmt.Errorf("Snapshot %d unaligned at %d, before its timeout %d after %d", s.ID, now, sp.timeout, sp.ts)
				}
				recID = s.ID
				copy(snapConsumed, consumed)
				clear(recorded)
				for c := range n {
					passed := pos[c] > r.term[c][s.ID]
					if passed == slices.Contains(a.Record, c) {
						return fmt.Errorf("unaligned Snapshot %d: channel %d passed its barrier=%t, recorded=%v", s.ID, c, passed, a.Record)
					}
				}
			}
		}
		for _, c := range a.StopRecording {
			if c != ch || recID == 0 || pos[c]-1 != r.term[c][recID] {
				return fmt.Errorf("StopRecording %d not at its barrier of %d (took from %d)", c, recID, ch)
			}
		}
		if a.Done != nil && *a.Done == recID {
			for c := range n {
				if !r.delivered(c, recID) || snapConsumed[c]+recorded[c] != r.pre[c][recID] {
					return fmt.Errorf("Done %d: channel %d: %d data before the snapshot + %d recorded, %d before the barrier",
						recID, c, snapConsumed[c], recorded[c], r.pre[c][recID])
				}
			}
			recID = 0
		}
		if err := k.apply(now, a); err != nil {
			return err
		}
		wake = a.WakeAt
		return nil
	}
	for range 100000 {
		now += rng.Int64N(4)
		if wake != 0 && now >= wake && rng.IntN(4) != 0 {
			if err := step("tick", -1, h.Tick(now)); err != nil {
				return err
			}
			continue
		}
		switch p := rng.IntN(100); {
		case p < 3:
			if err := step("tick", -1, h.Tick(now)); err != nil {
				return err
			}
			continue
		case p < 6 && r.aborts:
			var ids []int64
			if h.latest > 0 {
				ids = append(ids, h.latest)
			}
			if k.lastSnap > 0 {
				ids = append(ids, k.lastSnap)
			}
			ids = append(ids, h.latest+1+rng.Int64N(2), 1+rng.Int64N(int64(len(r.specs))))
			id := ids[rng.IntN(len(ids))]
			if err := step(fmt.Sprintf("abort %d", id), -1, h.Abort(now, id, "random")); err != nil {
				return err
			}
			continue
		}
		var ready []int
		for c := range n {
			if !k.blocked[c] && pos[c] < len(r.items[c]) {
				ready = append(ready, c)
			}
		}
		if len(ready) == 0 {
			if wake == 0 {
				break
			}
			now = max(now, wake)
			if err := step("tick", -1, h.Tick(now)); err != nil {
				return err
			}
			continue
		}
		c := ready[rng.IntN(len(ready))]
		it := r.items[c][pos[c]]
		pos[c]++
		var a Actions
		switch it.kind {
		case data:
			consumed[c]++
			if k.recording[c] {
				recorded[c]++
			}
			continue
		case barrierItem:
			flagged[it.id] = flagged[it.id] || it.unaligned
			s := r.specs[it.id]
			a = h.Barrier(now, c, Barrier{ID: it.id, Timestamp: s.ts, Unaligned: it.unaligned, AlignedTimeout: s.timeout})
		case cancelItem:
			a = h.CancelMarker(now, c, it.id)
		case endItem:
			a = h.EndOfPartition(now, c)
		}
		if err := step(fmt.Sprintf("ch%d %v", c, it), c, a); err != nil {
			return err
		}
	}
	drained := true
	for c := range n {
		if pos[c] < len(r.items[c]) || len(r.items[c]) == 0 || r.items[c][len(r.items[c])-1].kind != endItem {
			drained = false
		}
	}
	if drained && (h.phase != idle || len(h.pending) > 0) {
		return fmt.Errorf("every channel ended and drained, but %s", h)
	}
	if r.aborts || r.maxTracked > 0 {
		return nil
	}
	for id := int64(1); id < int64(len(r.specs)); id++ {
		s := r.specs[id]
		if r.mode == ExactlyOnce && (s.unaligned || s.timeout > 0) {
			continue
		}
		all, some := true, false
		for c := range n {
			all = all && r.delivered(c, id)
			some = some || r.term[c][id] < len(r.items[c]) && r.items[c][r.term[c][id]].kind == barrierItem
		}
		all = all && some
		if _, ok := k.snapped[id]; all && !ok && !(r.mode == AtLeastOnce && subsumed[id]) {
			return fmt.Errorf("every channel delivered checkpoint %d, but it has no Snapshot", id)
		}
	}
	return nil
}
