package typedstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/internal/testseed"
)

// measured is measureOf's answer for a value: bytes, or -1 when the type
// is measured by its encoding instead.
func measured[V any](v V) int64 {
	m, ok := measureOf(reflect.TypeFor[V]())
	if !ok {
		return -1
	}
	if m == nil {
		return 0
	}
	b, _ := m(unsafe.Pointer(&v))
	return b
}

// TestMeasureOf checks the rule of measureOf on values whose pointees are
// counted by hand.
func TestMeasureOf(t *testing.T) {
	type inner struct {
		S string
		N int64
	}
	type rec struct {
		A string
		B []string
		C map[string]int64
		D *inner
		E [2]string
		F int64
		G []int32
	}
	s100 := strings.Repeat("x", 100)
	m := map[string]int64{"ab": 1, "cde": 2}
	v := rec{A: "hello", B: make([]string, 2, 3), C: m, D: &inner{S: s100}, E: [2]string{"1", "22"}, G: make([]int32, 1, 10)}
	v.B[0], v.B[1] = "xy", "z"
	want := int64(5) + // A
		3*16 + 2 + 1 + // B: capacity of string headers, then the strings
		mapBytes(2, 16, 8) + 2 + 3 + // C: the map's table, then its keys
		int64(unsafe.Sizeof(inner{})) + 100 + // D
		1 + 2 + // E
		10*4 // G: capacity, no pointees
	if got := measured(v); got != want {
		t.Errorf("rec: %d bytes, want %d", got, want)
	}
	for name, c := range map[string]struct{ got, want int64 }{
		"int64":              {measured(int64(7)), 0},
		"pointer-free array": {measured([4]int64{}), 0},
		"string":             {measured("abc"), 3},
		"nil slice":          {measured([]string(nil)), 0},
		"nil map":            {measured(map[string]string(nil)), 0},
		"nil pointer":        {measured((*inner)(nil)), 0},
		"interface":          {measured[any]("abc"), -1},
		"func":               {measured(func() {}), -1},
		"recursive":          {measured(&node{}), -1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", name, c.got, c.want)
		}
	}
	if m, ok := measureOf(reflect.TypeFor[struct{ A, B int64 }]()); m != nil || !ok {
		t.Errorf("a struct without pointers has a measure (%v, %v): it would cost every record", m != nil, ok)
	}
}

type node struct{ next *node }

// stringOps are the ops of a table of strings, whose encoding is the
// string itself.
func stringOps() Ops[string] {
	return Ops[string]{
		Clone: func(v string) string { return v },
		Emit: func(e *Entry[string], _ int64, _ *[]byte, emit Emit) error {
			return emit(nil, false, []byte(e.Val), false, 0)
		},
		Restore: func(e *Entry[string], se snapshot.Entry, _ bool) error { e.Val = string(se.Value); return nil },
	}
}

const testGroups = 4

// sizedTable returns a table of E in a store of testGroups key groups that
// draws on a Memory of limit bytes.
func sizedTable[E any](t *testing.T, limit int64, ops Ops[E]) (*Store, *Table[E], *budget.Budget) {
	t.Helper()
	m := budget.New(limit)
	s := NewStore(keygroup.Range{Start: 0, End: testGroups - 1}, 128, clock.NewManual(0))
	s.UseMemory(m)
	tb, err := NewTable(s, snapshot.StateMeta{Name: "vals", Kind: snapshot.KindValue}, ops)
	if err != nil {
		t.Fatal(err)
	}
	return s, tb, m
}

// tableOnly is what tb's key groups' tables take (slots, control bytes,
// size words), from their sizes.
func tableOnly[E any](tb *Table[E]) int64 {
	var n int64
	for i := range tb.groups {
		n += tb.bytes(tb.groups[i].t.size())
	}
	return n
}

func setWord(s *Store, k uint64) { s.SetCurrentKeyWord(k, int(k%testGroups)) }

// settle settles tb's write in progress, as its next write would.
func settle[E any](tb *Table[E]) {
	if tb.sz != nil {
		tb.settle()
	}
}

// memoryError runs f and returns the *budget.Error it panics with, if any.
func memoryError(f func()) (err *budget.Error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); !ok || !errors.As(e, &err) {
				panic(r)
			}
		}
	}()
	f()
	return nil
}

// TestMemoryCountsStrings writes, overwrites and deletes strings of random
// lengths through every way of writing (Upsert, Lookup then Writable,
// OwnedWord) and checks, after each write settles, that what the store
// counts is its tables plus the lengths of the strings in a Go map of the
// same contents, and that its Memory holds that plus at most two chunks
// taken ahead; Release gives everything back.
func TestMemoryCountsStrings(t *testing.T) {
	r := testseed.Rand(t, 1)
	s, tb, m := sizedTable(t, 1<<40, stringOps())
	model := map[uint64]string{}
	for step := range 20000 {
		k := uint64(r.IntN(300))
		v := strings.Repeat("v", []int{0, 1, 15, 16, 100, 5000}[r.IntN(6)]+r.IntN(3))
		setWord(s, k)
		switch op := r.IntN(10); {
		case op < 4:
			e, _ := tb.Upsert()
			e.Val = v
			model[k] = v
		case op < 7:
			if e := tb.Lookup(); e != nil {
				tb.Writable(e).Val = v
				model[k] = v
			}
		case op < 9:
			if e := tb.OwnedWord(int(k%testGroups), k); e != nil {
				e.Val = v
				model[k] = v
			}
		default:
			tb.Delete()
			delete(model, k)
		}
		settle(tb)
		want := tableOnly(tb)
		for _, v := range model {
			want += int64(len(v))
		}
		if s.memUsed != want {
			t.Fatalf("step %d: the store counts %d bytes, its tables and strings take %d", step, s.memUsed, want)
		}
		if ahead := m.Used() - s.memUsed; ahead < 0 || ahead > 2*valueChunk {
			t.Fatalf("step %d: the Memory holds %d bytes for the store's %d", step, m.Used(), s.memUsed)
		}
	}
	s.Release()
	if m.Used() != 0 {
		t.Fatalf("after Release the Memory holds %d bytes", m.Used())
	}
}

// TestMemoryGivesBackOverwritesAndDeletes: a large string counts, its
// overwrite by a short one gives the difference back to the Memory (not
// only to the store), and so does a delete.
func TestMemoryGivesBackOverwritesAndDeletes(t *testing.T) {
	const big = 4 << 20
	s, tb, m := sizedTable(t, 1<<40, stringOps())
	setWord(s, 1)
	tb.Insert().Val = strings.Repeat("b", big)
	settle(tb)
	tables := tableOnly(tb)
	if got := m.Used(); got < tables+big {
		t.Fatalf("a %d-byte string: the Memory holds %d bytes", big, got)
	}
	tb.Writable(tb.Lookup()).Val = "x"
	settle(tb)
	if got := m.Used(); got > tables+1+2*valueChunk {
		t.Fatalf("after the overwrite by one byte the Memory holds %d bytes, the tables %d", got, tables)
	}
	tb.Writable(tb.Lookup()).Val = strings.Repeat("c", big)
	settle(tb)
	tb.Delete()
	if got := m.Used(); got > tables+2*valueChunk {
		t.Fatalf("after the delete the Memory holds %d bytes, the tables %d", got, tables)
	}
}

// TestMemoryValuesPastBoundFail writes 100 KiB strings under a bound of
// 1 MiB: a write fails (when it settles, at the table's next write) with
// a budget.Error that names the setting and what grew, before the Memory
// passes its bound.
func TestMemoryValuesPastBoundFail(t *testing.T) {
	const limit, size = 1 << 20, 100 << 10
	s, tb, m := sizedTable(t, limit, stringOps())
	var failed *budget.Error
	written := 0
	for k := uint64(0); failed == nil && k < 100; k++ {
		failed = memoryError(func() {
			setWord(s, k)
			e, _ := tb.Upsert()
			e.Val = strings.Repeat("s", size)
		})
		if failed == nil {
			written++
		}
		if m.Used() > limit {
			t.Fatalf("after %d strings the Memory holds %d bytes, past its bound", written, m.Used())
		}
	}
	if failed == nil {
		t.Fatalf("100 strings of %d bytes fit a bound of %d bytes", size, limit)
	}
	if written < limit/size-2 || written > limit/size+1 {
		t.Errorf("failed after %d strings of %d bytes under %d", written, size, limit)
	}
	msg := failed.Error()
	for _, want := range []string{`keyed state "vals"`, budget.WhatValues, "weir.Config.HeapStateMemory", "--heap-state-memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
}

type listItem struct {
	v  string
	ts int64
}

// TestMemoryCountsListElements appends strings to lists (a ListState's
// entries) and maps (a MapState's): what an entry is counted at, compared
// with what its elements take counted by hand after every append, is
// never more, and never less than three quarters of it from 32 elements
// on, half before (measures are spread over a container's later writes,
// see sizer: a small list that just doubled its array may not be
// measured yet).
func TestMemoryCountsListElements(t *testing.T) {
	r := testseed.Rand(t, 2)
	check := func(t *testing.T, step, n int, counted, exact int64) {
		t.Helper()
		low := exact * 3 / 4
		if n < 32 {
			low = exact / 2
		}
		if counted > exact || counted < low {
			t.Fatalf("step %d: the entry of %d elements is counted at %d bytes, its elements take %d", step, n, counted, exact)
		}
	}
	t.Run("list", func(t *testing.T) {
		s, tb, _ := sizedTable(t, 1<<40, Ops[[]listItem]{Clone: func(v []listItem) []listItem { return append([]listItem(nil), v...) }})
		model := map[uint64]int64{} // key: the bytes of its strings
		for step := range 20000 {
			k := uint64(r.IntN(20))
			v := strings.Repeat("e", r.IntN(200))
			setWord(s, k)
			e, _ := tb.Upsert()
			e.Val = append(e.Val, listItem{v: v})
			model[k] += int64(len(v))
			settle(tb)
			exact := int64(cap(e.Val))*int64(unsafe.Sizeof(listItem{})) + model[k]
			check(t, step, len(e.Val), sizeOf(tb), exact)
		}
	})
	t.Run("map", func(t *testing.T) {
		s, tb, _ := sizedTable(t, 1<<40, Ops[map[string]string]{})
		model := map[uint64]int64{}
		for step := range 20000 {
			k := uint64(r.IntN(20))
			uk, v := fmt.Sprint(step), strings.Repeat("e", r.IntN(200))
			setWord(s, k)
			e, ins := tb.Upsert()
			if ins {
				e.Val = map[string]string{}
			}
			e.Val[uk] = v
			model[k] += int64(len(uk) + len(v))
			settle(tb)
			check(t, step, len(e.Val), sizeOf(tb), mapBytes(len(e.Val), 16, 16)+model[k])
		}
	})
}

// sizeOf is what the current key's entry of tb is counted at.
func sizeOf[E any](tb *Table[E]) int64 {
	s := tb.s
	g := &tb.groups[s.kgIdx]
	return cellBytes(g.sizes[g.t.find(s.image(), s.cur)])
}

// TestMemoryCountsEncodedValues: a value type the rule cannot measure (an
// interface) is counted by the length of its encoding, an entry per
// element; a value of many elements is measured again after an eighth
// of them were added.
func TestMemoryCountsEncodedValues(t *testing.T) {
	s, tb, _ := sizedTable(t, 1<<40, Ops[any]{
		Clone: func(v any) any { return v },
		Emit: func(e *Entry[any], _ int64, scratch *[]byte, emit Emit) error {
			for _, el := range e.Val.([]string) {
				if err := emit(nil, false, []byte(el), false, 0); err != nil {
					return err
				}
			}
			return nil
		},
	})
	setWord(s, 3)
	e := tb.Insert()
	e.Val = []string{strings.Repeat("q", 1000)}
	settle(tb)
	if got := s.memUsed - tableOnly(tb); got != 1000 {
		t.Fatalf("a value encoded in 1000 bytes is counted at %d", got)
	}
	for n := 2; n <= 100; n++ {
		e, _ := tb.Upsert()
		e.Val = append(e.Val.([]string), "0123456789")
		settle(tb)
		got, exact := s.memUsed-tableOnly(tb), int64(1000+10*(n-1))
		if got > exact || got < exact-10*int64(n/8) {
			t.Fatalf("%d elements encoded in %d bytes are counted at %d", n, exact, got)
		}
	}
}

// TestMemorySnapshotHeld: after Freeze, what the task copies away from
// the snapshot (control words, page lists, pages of slots, the values it
// overwrites) stays counted until the snapshot is released, and only
// then; a snapshot released before the copies, or taken by Snapshot,
// holds nothing.
func TestMemorySnapshotHeld(t *testing.T) {
	const keys = 5000
	s, tb, m := sizedTable(t, 1<<40, stringOps())
	old := strings.Repeat("o", 100)
	for k := range uint64(keys) {
		setWord(s, k)
		tb.Insert().Val = old
	}
	settle(tb)
	// What the snapshot shares and the writes below copy: every group's
	// control words and page list, and every page.
	var shared int64
	for i := range tb.groups {
		g := &tb.groups[i].t
		shared += g.sharedBytes()
		for _, pg := range g.pages {
			shared += pageBytes(pg)
		}
	}
	overwrite := func(v string) {
		for k := range uint64(keys) {
			setWord(s, k)
			tb.Writable(tb.Lookup()).Val = v
		}
		settle(tb)
	}
	held := func() int64 { return m.Used() - s.memTaken }
	_, release := s.Freeze()
	overwrite("n")
	if got, want := held(), shared+keys*int64(len(old)); got != want {
		t.Fatalf("after overwriting every key the snapshot holds %d bytes, want %d (its pages, control words and old strings)", got, want)
	}
	if want := tableOnly(tb) + keys; s.memUsed != want {
		t.Fatalf("the store counts %d bytes, want %d", s.memUsed, want)
	}
	release()
	release() // twice: nothing more
	if got := held(); got != 0 {
		t.Fatalf("after the release the snapshot holds %d bytes", got)
	}
	_, release = s.Freeze()
	release()
	overwrite("m")
	s.Snapshot()
	overwrite("n")
	if got := held(); got != 0 {
		t.Fatalf("copies after a released snapshot and a Snapshot are counted: %d bytes", got)
	}
	// A growth rebuilds a shared group: the snapshot holds its old table.
	_, release = s.Freeze()
	setWord(s, 0)
	g := &tb.groups[0].t
	want := g.sharedBytes()
	for _, pg := range g.pages {
		want += pageBytes(pg)
	}
	for k := uint64(keys); held() < want; k += testGroups {
		setWord(s, k)
		tb.Insert().Val = ""
		if k > 10*keys {
			t.Fatalf("growing key group 0 after a snapshot: it holds %d bytes, want %d", held(), want)
		}
	}
	if got := held(); got != want {
		t.Fatalf("the snapshot holds %d bytes of the rebuilt group, want %d", got, want)
	}
	release()
	s.Release()
	if m.Used() != 0 {
		t.Fatalf("after the releases the Memory holds %d bytes", m.Used())
	}
}

// TestMemoryCountsLongKeys: a key too long for its slot is a string of its
// own, counted while the key is in the table.
func TestMemoryCountsLongKeys(t *testing.T) {
	s, tb, _ := sizedTable(t, 1<<40, Ops[int64]{Clone: func(v int64) int64 { return v }})
	key := make([]byte, 300)
	binary.LittleEndian.PutUint64(key, 42)
	s.SetCurrentKey(key, 1)
	tb.Insert()
	if got, want := s.memUsed-tableOnly(tb), int64(len(mapKey(nil, key, nil))); got != want {
		t.Fatalf("a long map key of %d bytes is counted at %d", want, got)
	}
	tb.Delete()
	if got := s.memUsed - tableOnly(tb); got != 0 {
		t.Fatalf("after its delete %d bytes are counted", got)
	}
}
