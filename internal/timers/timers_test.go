package timers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/testseed"
)

const maxPar = 16

func kgOf(key string) int { return keygroup.ForHash(keygroup.HashString(key), maxPar) }

func TestDedupDeleteAndOrder(t *testing.T) {
	s := New(keygroup.Range{Start: 0, End: maxPar - 1})
	s.SetCurrentKey([]byte("a"), kgOf("a"))
	s.RegisterEventTime(10)
	s.RegisterEventTime(10) // deduplicated
	s.RegisterEventTime(5)
	s.SetCurrentNamespace([]byte("w"))
	s.RegisterEventTime(10) // another namespace: another timer
	s.SetCurrentKey([]byte("b"), kgOf("b"))
	s.SetCurrentNamespace(nil)
	s.RegisterEventTime(7)
	s.RegisterEventTime(30)
	s.DeleteEventTime(30)
	s.DeleteEventTime(31) // absent: no-op
	s.RegisterProcessingTime(100)
	if ev, pr := s.Len(); ev != 4 || pr != 1 {
		t.Fatalf("Len = %d, %d", ev, pr)
	}
	var got []string
	s.AdvanceWatermark(10, func(tm Timer) {
		got = append(got, fmt.Sprintf("%d %s/%s", tm.Timestamp, tm.Key, tm.Namespace))
		if tm.Timestamp == 5 {
			s.SetCurrentKey(tm.Key, tm.KeyGroup)
			s.RegisterEventTime(8) // registered while firing, due: fires in this call
		}
	})
	want := []string{"5 a/", "7 b/", "8 a/"}
	if !slices.Equal(got[:3], want) || len(got) != 5 {
		t.Fatalf("fired %v", got)
	}
	if ts, ok := s.NextProcessingTime(); !ok || ts != 100 {
		t.Fatalf("NextProcessingTime = %d, %v", ts, ok)
	}
	s.FireProcessingTime(99, func(Timer) { t.Fatal("fired early") })
	n := 0
	s.FireProcessingTime(100, func(Timer) { n++ })
	if _, ok := s.NextProcessingTime(); ok || n != 1 {
		t.Fatalf("processing timers left, fired %d", n)
	}
}

type ref map[string]bool // "domain|ts|key|ns"

// TestAgainstReference drives the service and a plain set with the same
// random operations (including snapshots interleaved with writes) and
// compares what fires.
func TestAgainstReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(testseed.New(t), 1))
	s := New(keygroup.Range{Start: 0, End: maxPar - 1})
	model := ref{}
	var snaps [][]snapshot.Source
	var snapModels []ref
	wm, now := int64(0), int64(0)
	for step := range 20000 {
		// Long keys share their first 8 id bytes, so that the heap's order
		// falls back to whole ids.
		key := fmt.Sprint([]string{"k", "kkkkkkkkkk"}[rnd.IntN(2)], rnd.IntN(30))
		ns := []string{"", "n"}[rnd.IntN(2)]
		ts := wm + rnd.Int64N(50)
		s.SetCurrentKey([]byte(key), kgOf(key))
		s.SetCurrentNamespace([]byte(ns))
		id := fmt.Sprintf("%d|%s|%s", ts, key, ns)
		switch rnd.IntN(7) {
		case 0, 1:
			s.RegisterEventTime(ts)
			model["e|"+id] = true
		case 2:
			s.DeleteEventTime(ts)
			delete(model, "e|"+id)
		case 3:
			s.RegisterProcessingTime(now + ts - wm)
			model[fmt.Sprintf("p|%d|%s|%s", now+ts-wm, key, ns)] = true
		case 4:
			wm += rnd.Int64N(20)
			var prev int64 = -1 << 62
			prevKG, prevID := -1, ""
			s.AdvanceWatermark(wm, func(tm Timer) {
				k := fmt.Sprintf("e|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace)
				if !model[k] || tm.Timestamp > wm || tm.Timestamp < prev {
					t.Fatalf("step %d: fired %s at watermark %d (prev %d), model has it: %v", step, k, wm, prev, model[k])
				}
				// Equal timestamps fire in key group, then id order
				// (uvarint(len(key)) key ns): deterministic.
				id := string(binary.AppendUvarint(nil, uint64(len(tm.Key)))) + string(tm.Key) + string(tm.Namespace)
				if tm.Timestamp == prev && (tm.KeyGroup < prevKG || tm.KeyGroup == prevKG && id <= prevID) {
					t.Fatalf("step %d: fired %s (key group %d) after %q (key group %d) at one timestamp", step, k, tm.KeyGroup, prevID, prevKG)
				}
				prevKG, prevID = tm.KeyGroup, id
				prev = tm.Timestamp
				delete(model, k)
			})
		case 5:
			now += rnd.Int64N(20)
			s.FireProcessingTime(now, func(tm Timer) {
				k := fmt.Sprintf("p|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace)
				if !model[k] {
					t.Fatalf("step %d: fired %s, not in model", step, k)
				}
				delete(model, k)
			})
		case 6:
			if rnd.IntN(50) == 0 {
				snaps = append(snaps, s.Snapshot())
				snapModels = append(snapModels, cloneRef(model))
			}
		}
	}
	// Every snapshot, written after all those later changes, holds exactly its model.
	for i, srcs := range snaps {
		got := readTimers(t, srcs, keygroup.Range{Start: 0, End: maxPar - 1})
		if !equalSets(got, snapModels[i]) {
			t.Fatalf("snapshot %d: %d timers, model %d", i, len(got), len(snapModels[i]))
		}
	}
	ev, pr := s.Len()
	if ev+pr != len(model) {
		t.Fatalf("service has %d timers, model %d", ev+pr, len(model))
	}
}

func cloneRef(m ref) ref {
	c := ref{}
	for k := range m {
		c[k] = true
	}
	return c
}

func equalSets(a, b ref) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// readTimers writes the sources to a canonical snapshot, restores it into a
// fresh service and fires everything.
func readTimers(t *testing.T, srcs []snapshot.Source, rng keygroup.Range) ref {
	var buf bytes.Buffer
	n, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: maxPar, Range: rng}, srcs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), n)
	if err != nil {
		t.Fatal(err)
	}
	return fireAll(t, []*snapshot.Reader{r}, rng)
}

func fireAll(t *testing.T, rs []*snapshot.Reader, rng keygroup.Range) ref {
	s := New(rng)
	for _, r := range rs {
		if err := s.Restore(r); err != nil {
			t.Fatal(err)
		}
	}
	out := ref{}
	s.AdvanceWatermark(1<<62, func(tm Timer) {
		if !rng.Contains(tm.KeyGroup) || kgOf(string(tm.Key)) != tm.KeyGroup {
			t.Fatalf("timer of key %s in key group %d, restored into %v", tm.Key, tm.KeyGroup, rng)
		}
		out[fmt.Sprintf("e|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace)] = true
	})
	s.FireProcessingTime(1<<62, func(tm Timer) {
		out[fmt.Sprintf("p|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace)] = true
	})
	return out
}

// TestRescale registers timers on 3 subtasks, snapshots them and restores
// at parallelism 1 to 4 from all snapshots: together the new subtasks hold
// exactly the old timers, each in the subtask owning its key group.
func TestRescale(t *testing.T) {
	rnd := rand.New(rand.NewPCG(testseed.New(t), 2))
	const oldPar = 3
	var olds []*Service
	for i := range oldPar {
		olds = append(olds, New(keygroup.RangeFor(i, oldPar, maxPar)))
	}
	model := ref{}
	for range 3000 {
		key := fmt.Sprint("key", rnd.IntN(500))
		kg := kgOf(key)
		s := olds[keygroup.OperatorIndex(kg, oldPar, maxPar)]
		s.SetCurrentKey([]byte(key), kg)
		ts := rnd.Int64N(1000)
		if rnd.IntN(2) == 0 {
			s.RegisterEventTime(ts)
			model[fmt.Sprintf("e|%d|%s|", ts, key)] = true
		} else {
			s.RegisterProcessingTime(ts)
			model[fmt.Sprintf("p|%d|%s|", ts, key)] = true
		}
	}
	var readers []*snapshot.Reader
	for i, s := range olds {
		var buf bytes.Buffer
		n, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: maxPar, Range: keygroup.RangeFor(i, oldPar, maxPar)}, s.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), n)
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	for p := 1; p <= 4; p++ {
		all := ref{}
		for i := range p {
			for k := range fireAll(t, readers, keygroup.RangeFor(i, p, maxPar)) {
				if all[k] {
					t.Fatalf("parallelism %d: timer %s restored twice", p, k)
				}
				all[k] = true
			}
		}
		if !equalSets(all, model) {
			t.Fatalf("parallelism %d: %d timers restored, want %d", p, len(all), len(model))
		}
	}
}

// A timer registered before any namespace was set is the one registered
// with an empty namespace and the one restored without a namespace.
func TestNoNamespaceIsEmptyNamespace(t *testing.T) {
	rng := keygroup.Range{Start: 0, End: maxPar - 1}
	s := New(rng)
	s.SetCurrentKey([]byte("a"), kgOf("a"))
	s.RegisterEventTime(10)
	s.SetCurrentNamespace(nil)
	s.RegisterEventTime(10)
	s.SetCurrentNamespace([]byte{})
	s.RegisterEventTime(10)
	if ev, _ := s.Len(); ev != 1 {
		t.Fatalf("%d timers, want 1", ev)
	}
	var buf bytes.Buffer
	n, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: maxPar, Range: rng}, s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), n)
	if err != nil {
		t.Fatal(err)
	}
	s2 := New(rng)
	if err := s2.Restore(r); err != nil {
		t.Fatal(err)
	}
	s2.SetCurrentKey([]byte("a"), kgOf("a"))
	s2.RegisterEventTime(10)
	s2.DeleteEventTime(10)
	if ev, _ := s2.Len(); ev != 0 {
		t.Fatalf("restored: %d timers after a delete, want 0", ev)
	}
}

// TestRestoresEarlierSnapshot restores timers snapshotted by the service
// of 4aad367 (a map of items by string id; testdata/timers-4aad367.txt
// lists them), at parallelism 1 and 3, and writes them again: checkpoints
// and savepoints written before the tables still restore.
func TestRestoresEarlierSnapshot(t *testing.T) {
	data, err := os.ReadFile("testdata/timers-4aad367.snap")
	if err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile("testdata/timers-4aad367.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := ref{}
	for _, l := range bytes.Split(bytes.TrimSpace(list), []byte("\n")) {
		want[string(l)] = true
	}
	open := func() *snapshot.Reader {
		r, err := snapshot.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for p := 1; p <= 3; p += 2 {
		got := ref{}
		for i := range p {
			for k := range fireAll(t, []*snapshot.Reader{open()}, keygroup.RangeFor(i, p, maxPar)) {
				got[k] = true
			}
		}
		if !equalSets(got, want) {
			t.Fatalf("parallelism %d: %d timers restored, want %d", p, len(got), len(want))
		}
	}
	all := keygroup.Range{Start: 0, End: maxPar - 1}
	s := New(all)
	if err := s.Restore(open()); err != nil {
		t.Fatal(err)
	}
	if got := readTimers(t, s.Snapshot(), all); !equalSets(got, want) {
		t.Fatalf("written again: %d timers, want %d", len(got), len(want))
	}
}

// TestSnapshotWhileWriting writes a snapshot on another goroutine while the
// service goes on registering (appending to the arenas it shares, and
// compacting them), firing and deleting: the snapshot holds the timers of
// its moment (run with -race).
func TestSnapshotWhileWriting(t *testing.T) {
	rnd := rand.New(rand.NewPCG(testseed.New(t), 3))
	rng := keygroup.Range{Start: 0, End: maxPar - 1}
	s := New(rng)
	model := ref{}
	reg := func(ts int64) {
		key := fmt.Sprint("key", rnd.IntN(200))
		ns := []string{"", "window"}[rnd.IntN(2)]
		s.SetCurrentKey([]byte(key), kgOf(key))
		s.SetCurrentNamespace([]byte(ns))
		s.RegisterEventTime(ts)
		model[fmt.Sprintf("e|%d|%s|%s", ts, key, ns)] = true
	}
	for range 3000 {
		reg(rnd.Int64N(1000))
	}
	var kept []Timer
	var keptAs []string
	for round := range 5 {
		want := cloneRef(model)
		srcs := s.Snapshot()
		done := make(chan ref)
		go func() { done <- readTimers(t, srcs, rng) }()
		wm := int64(round+1) * 1000
		for range 3000 {
			reg(wm + rnd.Int64N(1000))
			if rnd.IntN(10) == 0 {
				key := fmt.Sprint("key", rnd.IntN(200))
				ts := wm + rnd.Int64N(1000)
				s.SetCurrentKey([]byte(key), kgOf(key))
				s.SetCurrentNamespace(nil)
				s.DeleteEventTime(ts)
				delete(model, fmt.Sprintf("e|%d|%s|", ts, key))
			}
		}
		s.AdvanceWatermark(wm+500, func(tm Timer) {
			k := fmt.Sprintf("e|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace)
			delete(model, k)
			kept = append(kept, tm)
			keptAs = append(keptAs, k)
		})
		if got := <-done; !equalSets(got, want) {
			t.Fatalf("round %d: snapshot holds %d timers, want %d", round, len(got), len(want))
		}
	}
	// Fired timers' keys and namespaces may be kept: later registrations
	// (and arena compactions) leave them as they were.
	for i, tm := range kept {
		if k := fmt.Sprintf("e|%d|%s|%s", tm.Timestamp, tm.Key, tm.Namespace); k != keptAs[i] {
			t.Fatalf("kept timer %s is now %s", keptAs[i], k)
		}
	}
	if ev, _ := s.Len(); ev != len(model) {
		t.Fatalf("service has %d timers, model %d", ev, len(model))
	}
}

// TestMovedTimersAgainstReference moves timers later as a session window
// does (delete one, register a later one of the same key in another
// namespace: the service forwards from the deleted timer's heap entry),
// among plain registers and deletes of event- and processing-time timers,
// snapshots restored into a new service mid-way and watermarks: each
// advance fires exactly the model's due timers in (timestamp, key group,
// id) order, and Len and every snapshot agree with the model.
func TestMovedTimersAgainstReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(testseed.New(t), 7))
	all := keygroup.Range{Start: 0, End: maxPar - 1}
	s := New(all)
	type tmr struct {
		ts      int64
		kg      int
		key, ns string
	}
	model := map[tmr]bool{}
	id := func(x tmr) string {
		return string(binary.AppendUvarint(nil, uint64(len(x.key)))) + x.key + x.ns
	}
	set := func(key, ns string) {
		s.SetCurrentKey([]byte(key), kgOf(key))
		s.SetCurrentNamespace([]byte(ns))
	}
	// cur is each key's moving timer (its namespace names its timestamp).
	cur := map[string]int64{}
	wm := int64(0)
	for step := range 30000 {
		key := fmt.Sprint([]string{"k", "kkkkkkkkkk"}[rnd.IntN(2)], rnd.IntN(20))
		switch r := rnd.IntN(20); {
		case r < 10: // move the key's timer later (or start one)
			old, ok := cur[key]
			next := max(old, wm) + rnd.Int64N(5)
			if ok {
				set(key, fmt.Sprint("s", old))
				s.DeleteEventTime(old)
				delete(model, tmr{old, kgOf(key), key, fmt.Sprint("s", old)})
				if rnd.IntN(4) == 0 { // something else between
					other := fmt.Sprint("k", rnd.IntN(20))
					set(other, "x")
					ts := wm + rnd.Int64N(30)
					s.RegisterEventTime(ts)
					model[tmr{ts, kgOf(other), other, "x"}] = true
				}
			}
			set(key, fmt.Sprint("s", next))
			s.RegisterEventTime(next)
			model[tmr{next, kgOf(key), key, fmt.Sprint("s", next)}] = true
			cur[key] = next
		case r < 13:
			ts := wm + rnd.Int64N(30)
			set(key, "x")
			s.RegisterEventTime(ts)
			model[tmr{ts, kgOf(key), key, "x"}] = true
		case r < 15:
			ts := wm + rnd.Int64N(30)
			set(key, "x")
			s.DeleteEventTime(ts)
			delete(model, tmr{ts, kgOf(key), key, "x"})
		case r < 16:
			// Processing-time timers move too (a separate queue).
			set(key, "p")
			s.DeleteProcessingTime(5)
			s.RegisterProcessingTime(6 + rnd.Int64N(3))
		case r < 19:
			wm += rnd.Int64N(8)
			var want []tmr
			for x := range model {
				if x.ts <= wm {
					want = append(want, x)
				}
			}
			slices.SortFunc(want, func(a, b tmr) int {
				if a.ts != b.ts {
					return int(a.ts - b.ts)
				}
				if a.kg != b.kg {
					return a.kg - b.kg
				}
				return strings.Compare(id(a), id(b))
			})
			var got []tmr
			s.AdvanceWatermark(wm, func(tm Timer) {
				got = append(got, tmr{tm.Timestamp, tm.KeyGroup, string(tm.Key), string(tm.Namespace)})
			})
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: watermark %d fired %v, want %v", step, wm, got, want)
			}
			for _, x := range got {
				delete(model, x)
				if x.ns != "x" && cur[x.key] == x.ts {
					delete(cur, x.key)
				}
			}
		default:
			want := ref{}
			for x := range model {
				want[fmt.Sprintf("e|%d|%s|%s", x.ts, x.key, x.ns)] = true
			}
			got := readTimers(t, s.Snapshot()[:1], all)
			if !equalSets(got, want) {
				t.Fatalf("step %d: snapshot holds %d timers, model %d", step, len(got), len(want))
			}
			if rnd.IntN(3) == 0 {
				// Go on from the snapshot, as a restored task.
				var buf bytes.Buffer
				n, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: maxPar, Range: all}, s.Snapshot())
				if err != nil {
					t.Fatal(err)
				}
				r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), n)
				if err != nil {
					t.Fatal(err)
				}
				s = New(all)
				if err := s.Restore(r); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ev, _ := s.Len(); ev != len(model) {
			t.Fatalf("step %d: service has %d event-time timers, model %d", step, ev, len(model))
		}
	}
}

// TestFiringCallbacksAgainstReference fires many timers at once (as a
// window operator's timers of one window are due together) while the
// firing callbacks register later timers, delete timers (some due in this
// advance, some moved: deleted and registered later, which forwards) and
// snapshots are taken: every timer fires once, in (timestamp, key group,
// id) order, and nothing else fires.
func TestFiringCallbacksAgainstReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(testseed.New(t), 11))
	all := keygroup.Range{Start: 0, End: maxPar - 1}
	s := New(all)
	type tmr struct {
		ts      int64
		key, ns string
	}
	model := map[tmr]bool{}
	var live []tmr // model's keys, possibly stale (checked against model)
	set := func(x tmr) {
		s.SetCurrentKey([]byte(x.key), kgOf(x.key))
		s.SetCurrentNamespace([]byte(x.ns))
	}
	register := func(x tmr) {
		set(x)
		s.RegisterEventTime(x.ts)
		if !model[x] {
			model[x] = true
			live = append(live, x)
		}
	}
	remove := func() {
		for range 4 {
			if len(live) == 0 {
				return
			}
			i := rnd.IntN(len(live))
			x := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			if model[x] {
				set(x)
				s.DeleteEventTime(x.ts)
				delete(model, x)
				return
			}
		}
	}
	newTimer := func(ts int64) tmr {
		// Long keys share their first 8 id bytes: the order falls back to whole ids.
		return tmr{ts, fmt.Sprint([]string{"k", "kkkkkkkkkk"}[rnd.IntN(2)], rnd.IntN(2000)), []string{"", "w"}[rnd.IntN(2)]}
	}
	wm := int64(0)
	for round := range 40 {
		spread := 1 + rnd.Int64N(40) // a few timestamps (windows) or many
		for range 200 + rnd.IntN(3000) {
			register(newTimer(wm + 1 + rnd.Int64N(spread)))
		}
		for range rnd.IntN(300) {
			remove()
		}
		wm += 1 + rnd.Int64N(spread*2)
		var prev tmr
		var prevKG int
		first := true
		s.AdvanceWatermark(wm, func(tm Timer) {
			x := tmr{tm.Timestamp, string(tm.Key), string(tm.Namespace)}
			if !model[x] || tm.Timestamp > wm {
				t.Fatalf("round %d: fired %v at watermark %d, in the model: %v", round, x, wm, model[x])
			}
			id := func(x tmr) string {
				return string(binary.AppendUvarint(nil, uint64(len(x.key)))) + x.key + x.ns
			}
			if !first && (x.ts < prev.ts || x.ts == prev.ts && (tm.KeyGroup < prevKG || tm.KeyGroup == prevKG && id(x) <= id(prev))) {
				t.Fatalf("round %d: fired %v (key group %d) after %v (key group %d)", round, x, tm.KeyGroup, prev, prevKG)
			}
			first, prev, prevKG = false, x, tm.KeyGroup
			delete(model, x)
			switch rnd.IntN(8) {
			case 0: // a later timer, due in this advance or not
				register(newTimer(x.ts + 1 + rnd.Int64N(spread)))
			case 1, 2: // delete one, maybe among those taken out
				remove()
			case 3: // move one later: deleted, then registered again later
				if len(live) > 0 {
					y := live[rnd.IntN(len(live))]
					if model[y] {
						set(y)
						s.DeleteEventTime(y.ts)
						delete(model, y)
						register(tmr{max(y.ts, x.ts) + 1 + rnd.Int64N(spread), y.key, y.ns})
					}
				}
			case 4:
				if rnd.IntN(20) == 0 {
					s.Snapshot()
				}
			}
		})
		for x := range model {
			if x.ts <= wm {
				t.Fatalf("round %d: %v not fired at watermark %d", round, x, wm)
			}
		}
		if ev, _ := s.Len(); ev != len(model) {
			t.Fatalf("round %d: service has %d timers, model %d", round, ev, len(model))
		}
	}
}
