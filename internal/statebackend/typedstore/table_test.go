package typedstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/testseed"
)

// listOps make a table of []int64 values that the test modifies in place,
// so a copy-on-write mistake shows up as a snapshot that changes later.
func listOps() Ops[[]int64] {
	return Ops[[]int64]{
		Clone: slices.Clone[[]int64],
		Emit: func(e *Entry[[]int64], _ int64, scratch *[]byte, emit Emit) error {
			b := (*scratch)[:0]
			for _, v := range e.Val {
				b = binary.AppendVarint(b, v)
			}
			*scratch = b
			return emit(nil, false, b, false, 0)
		},
		Restore: func(e *Entry[[]int64], se snapshot.Entry, _ bool) error {
			e.Val = decodeList(se.Value)
			return nil
		},
	}
}

func decodeList(b []byte) []int64 {
	var out []int64
	for len(b) > 0 {
		v, n := binary.Varint(b)
		out = append(out, v)
		b = b[n:]
	}
	return out
}

// modelKey is how the reference model names an entry: key group, key and
// namespace, unambiguously.
func modelKey(kg int, key, ns []byte) string {
	return fmt.Sprintf("%d|%x|%x", kg, key, ns)
}

// randomBytes returns bytes of a length chosen to hit both sides of every
// boundary of the table: empty, the word sizes, the inline limit (a map key
// is a length byte plus key plus namespace), long keys and keys long enough
// for a two-byte length prefix. Zero bytes are common, so that keys that
// differ only by trailing zeros meet.
func randomBytes(r *rand.Rand) []byte {
	lengths := []int{0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 22, 23, 24, 25, 40, 127, 128, 300}
	b := make([]byte, lengths[r.IntN(len(lengths))])
	for i := range b {
		if r.IntN(3) > 0 {
			b[i] = byte(r.IntN(4))
		} else {
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

type pendingSnap struct {
	want    map[string][]int64
	sources []snapshot.Source
}

// TestTableAgainstModel runs random state operations, snapshots and
// restores on a table and on a Go map of the same contents, and compares
// every read, every snapshot (read after later writes) and the restored
// table.
func TestTableAgainstModel(t *testing.T) {
	// Few key groups: long probe runs and growth; one key group: a table of
	// several pages, each copied on its own after a snapshot.
	// Lookups read the control word first in tables this small; "preferred
	// slot first" forces the order of tables larger than the caches.
	for _, prefFirst := range []bool{false, true} {
		name := ""
		if prefFirst {
			name = ", preferred slot first"
		}
		t.Run("8 key groups"+name, func(t *testing.T) {
			testTableAgainstModel(t, keygroup.Range{Start: 3, End: 10}, []keygroup.Range{{Start: 3, End: 6}, {Start: 7, End: 10}}, prefFirst)
		})
		t.Run("1 key group"+name, func(t *testing.T) {
			testTableAgainstModel(t, keygroup.Range{Start: 3, End: 3}, []keygroup.Range{{Start: 3, End: 3}}, prefFirst)
		})
	}
}

func testTableAgainstModel(t *testing.T, rng keygroup.Range, parts []keygroup.Range, prefFirst bool) {
	testTableAgainstModelFrom(t, rng, parts, prefFirst, 0)
}

// testTableAgainstModelFrom is testTableAgainstModel from snapshot
// version ver.
func testTableAgainstModelFrom(t *testing.T, rng keygroup.Range, parts []keygroup.Range, prefFirst bool, ver uint64) {
	r := testseed.Rand(t, 0)
	meta := snapshot.StateMeta{Name: "list", Kind: snapshot.KindValue}
	s := NewStore(rng, 128, clock.NewManual(0))
	fastForward(s, ver)
	tbl, err := NewTable(s, meta, listOps())
	if err != nil {
		t.Fatal(err)
	}
	if prefFirst {
		tbl.prefFirst = -1
	}
	var keys, nss [][]byte
	for range 400 {
		keys = append(keys, randomBytes(r))
	}
	nss = append(nss, nil, nil, nil, []byte{0}, []byte{0, 0}, []byte{1})
	for range 4 {
		nss = append(nss, randomBytes(r))
	}
	kgOf := func(key []byte) int {
		var h uint32
		for _, c := range key {
			h = h*31 + uint32(c)
		}
		return rng.Start + int(h%uint32(rng.Len()))
	}

	model := map[string][]int64{}
	var snaps []pendingSnap
	var curKey, curNS []byte
	setKey := func() {
		curKey = keys[r.IntN(len(keys))]
		s.SetCurrentKey(curKey, kgOf(curKey))
	}
	setKey()
	steps := 200_000
	if testing.Short() {
		steps = 40_000
	}
	for step := range steps {
		mk := modelKey(kgOf(curKey), curKey, curNS)
		switch op := r.IntN(100); {
		case op < 30:
			setKey()
		case op < 35:
			curNS = nss[r.IntN(len(nss))]
			s.SetCurrentNamespace(curNS)
		case op < 55:
			checkRead(t, step, tbl, model, mk)
		case op < 85:
			modelWrite(r, tbl, model, mk)
		case op < 95:
			tbl.Delete()
			delete(model, mk)
		case op < 97:
			if r.IntN(10) > 0 {
				break // snapshots copy the model: keep them rare
			}
			snaps = append(snaps, takeSnapshot(s, model))
		default:
			if len(snaps) > 0 && r.IntN(5) == 0 {
				i := r.IntN(len(snaps))
				checkSnapshot(t, step, rng, snaps[i])
				snaps = slices.Delete(snaps, i, i+1)
			}
		}
		if tbl.Len() != len(model) {
			t.Fatalf("step %d: table has %d entries, model %d", step, tbl.Len(), len(model))
		}
		if !prefFirst && tbl.keys > tbl.prefFirst {
			t.Fatalf("step %d: %d keys passed the threshold %d: the table no longer reads the control word first", step, tbl.keys, tbl.prefFirst)
		}
	}
	for _, p := range snaps {
		checkSnapshot(t, steps, rng, p)
	}

	// Restore the final state into a new store, split in two ranges.
	var buf bytes.Buffer
	if _, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: 128, Range: rng}, s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	rd, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	restored := 0
	for _, part := range parts {
		s2 := NewStore(part, 128, clock.NewManual(0))
		if err := s2.Restore(rd); err != nil {
			t.Fatal(err)
		}
		t2, err := NewTable(s2, meta, listOps())
		if err != nil {
			t.Fatal(err)
		}
		restored += t2.Len()
		for _, key := range keys {
			kg := kgOf(key)
			if !part.Contains(kg) {
				continue
			}
			s2.SetCurrentKey(key, kg)
			for _, ns := range nss {
				s2.SetCurrentNamespace(ns)
				want, ok := model[modelKey(kg, key, ns)]
				e := t2.Lookup()
				if (e != nil) != ok || (ok && !slices.Equal(e.Val, want)) {
					t.Fatalf("restored key %x ns %x: %v, want %v (present %v)", key, ns, e, want, ok)
				}
			}
		}
	}
	if size := tbl.groups[0].t.size(); size <= 1<<pageBits && rng.Len() == 1 {
		t.Fatalf("one key group ended with %d slots: fewer than two pages", size)
	}
	if restored != len(model) {
		t.Fatalf("restored %d entries, want %d", restored, len(model))
	}
}

// checkRead compares the current key's entry with the model's.
func checkRead(t *testing.T, step int, tbl *Table[[]int64], model map[string][]int64, mk string) {
	t.Helper()
	want, ok := model[mk]
	e := tbl.Lookup()
	if (e != nil) != ok || (ok && !slices.Equal(e.Val, want)) {
		t.Fatalf("step %d: %s: table has %v, model %v (present %v)", step, mk, e, want, ok)
	}
}

// modelWrite inserts the current key, or modifies its list in place or
// appends to it, in the table and the model.
func modelWrite(r *rand.Rand, tbl *Table[[]int64], model map[string][]int64, mk string) {
	e := tbl.Lookup()
	v := r.Int64N(1000)
	switch {
	case e == nil:
		e = tbl.Insert()
		e.Val = []int64{v}
	case r.IntN(2) == 0:
		e = tbl.Writable(e)
		e.Val[r.IntN(len(e.Val))] = v
	default:
		e = tbl.Writable(e)
		e.Val = append(e.Val, v)
	}
	model[mk] = slices.Clone(e.Val)
}

// takeSnapshot snapshots the store, with a deep copy of the model to
// compare it with later.
func takeSnapshot(s *Store, model map[string][]int64) pendingSnap {
	want := maps.Clone(model)
	for k, v := range want {
		want[k] = slices.Clone(v)
	}
	return pendingSnap{want: want, sources: s.Snapshot()}
}

func checkSnapshot(t *testing.T, step int, rng keygroup.Range, p pendingSnap) {
	t.Helper()
	got := map[string][]int64{}
	for _, src := range p.sources {
		for kg := rng.Start; kg <= rng.End; kg++ {
			err := src.KeyGroup(kg, func(e snapshot.Entry) error {
				k := modelKey(kg, e.Key, e.Namespace)
				if _, dup := got[k]; dup {
					return fmt.Errorf("entry %s twice", k)
				}
				got[k] = decodeList(e.Value)
				return nil
			})
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if !maps.EqualFunc(got, p.want, slices.Equal) {
		t.Fatalf("step %d: a snapshot changed after it was taken: %d entries, want %d", step, len(got), len(p.want))
	}
}

// TestImageMatchesMapKey checks the two ways of computing a key's image,
// from its map key and directly from the key, on every short length.
func TestImageMatchesMapKey(t *testing.T) {
	r := testseed.Rand(t, 1)
	for n := 0; n < inlineKey; n++ {
		for range 50 {
			key := make([]byte, n)
			for i := range key {
				key[i] = byte(r.Uint32())
			}
			im := plainImage(key)
			want := imageOf(mapKey(nil, key, nil))
			if im != want {
				t.Fatalf("len %d: image from key %+v, from map key %+v", n, im, want)
			}
			if b := appendShort(nil, im.hn, im.w0, im.w1); !bytes.Equal(b, mapKey(nil, key, nil)) {
				t.Fatalf("len %d: image bytes %x", n, b)
			}
		}
	}
}

// TestProbe: Probed finds the entry Lookup finds, for most keys (a key
// whose group has an earlier slot with the same control byte, or that lies
// beyond its home group, is not covered; at these loads that is a few
// percent), after the current key has moved on, and after the table grew
// or a snapshot made its page shared (then only once the entry is owned
// again); never another key's entry; and nothing for a long key.
func TestProbe(t *testing.T) {
	rng := keygroup.Range{Start: 0, End: 3}
	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, err := NewTable(s, snapshot.StateMeta{Name: "p", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	ns := []byte{1, 2, 3, 4, 5, 6, 7}
	set := func(k uint64) {
		s.SetCurrentKeyWord(k, int(k%4))
		s.SetCurrentNamespace(ns)
	}
	for k := range uint64(n) {
		set(k)
		tbl.Insert().Val = int64(k)
	}
	probes := make([]Probe, n)
	for k := range uint64(n) {
		set(k)
		if !tbl.Probe(&probes[k]) {
			t.Fatalf("key %d: no probe", k)
		}
	}
	check := func(what string, snapshotted, stale bool) {
		t.Helper()
		set(n + 1) // another key is current
		covered := 0
		for k := range uint64(n) {
			e := tbl.Probed(&probes[k])
			if e == nil {
				continue
			}
			if e.Val != int64(k) {
				t.Fatalf("%s: key %d: Probed found the entry of %d", what, k, e.Val)
			}
			if snapshotted {
				t.Fatalf("%s: key %d: Probed returned an entry a snapshot shares", what, k)
			}
			covered++
		}
		t.Logf("%s: Probed found %d of %d keys", what, covered, n)
		if !snapshotted && !stale && covered < n*8/10 {
			t.Fatalf("%s: Probed found %d of %d keys", what, covered, n)
		}
	}
	check("as probed", false, false)
	for k := uint64(n); k < 4*n; k++ { // the tables grow: the probes' slots move
		set(k)
		tbl.Insert().Val = int64(k)
	}
	check("probes of the smaller tables", false, true)
	for k := range uint64(n) { // probes of the grown tables
		set(k)
		tbl.Probe(&probes[k])
	}
	check("after growing", false, false)
	s.Snapshot()
	check("after a snapshot", true, false)
	for k := range uint64(n) {
		set(k)
		e := tbl.Writable(tbl.Lookup())
		e.Val = int64(k)
	}
	check("owned again", false, false)
	s.SetCurrentKey(bytes.Repeat([]byte{'x'}, 40), 0)
	var p Probe
	if tbl.Probe(&p) {
		t.Fatalf("a long key got a probe")
	}
}

// TestProbeFull: at the most a table holds before it grows (7/8 of its
// slots), where many keys are past their home group, Probed finds most
// keys, and never an absent key.
func TestProbeFull(t *testing.T) {
	s := NewStore(keygroup.Range{Start: 0, End: 0}, 128, clock.NewManual(0))
	tbl, err := NewTable(s, snapshot.StateMeta{Name: "p", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1024 * 7 / 8
	ns := []byte{1, 2, 3, 4, 5, 6, 7}
	set := func(k uint64) {
		s.SetCurrentKeyWord(k, 0)
		s.SetCurrentNamespace(ns)
	}
	for k := range uint64(n) {
		set(k)
		tbl.Insert().Val = int64(k)
	}
	if size := tbl.groups[0].t.size(); size != 1024 {
		t.Fatalf("the table has %d slots, want 1024", size)
	}
	found := 0
	for k := range uint64(n) {
		set(k)
		var p Probe
		if !tbl.Probe(&p) {
			t.Fatalf("key %d: no probe", k)
		}
		set(n + k) // another key is current
		if e := tbl.Probed(&p); e != nil {
			if e.Val != int64(k) {
				t.Fatalf("key %d: Probed found the entry of %d", k, e.Val)
			}
			found++
		}
	}
	t.Logf("Probed found %d of %d keys", found, n)
	if found < n*7/10 {
		t.Fatalf("Probed found %d of %d keys", found, n)
	}
	for k := uint64(n); k < 2*n; k++ {
		set(k)
		var p Probe
		tbl.Probe(&p)
		if tbl.Probed(&p) != nil {
			t.Fatalf("absent key %d: Probed found an entry", k)
		}
	}
}

// CurrentLines runs once per element of a keyed process function's run:
// it must not allocate (its probe once escaped through the erased
// tables), and the lines it names must hold the entry that Probed then
// finds, whole (an entry of a large value spans several lines).
func TestCurrentLinesNamesTheEntry(t *testing.T) {
	s := NewStore(keygroup.Range{Start: 0, End: 3}, 128, clock.NewManual(0))
	tbl, err := NewTable(s, snapshot.StateMeta{Name: "p", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
	if err != nil {
		t.Fatal(err)
	}
	big, err := NewTable(s, snapshot.StateMeta{Name: "big", Kind: snapshot.KindValue}, Ops[[200]byte]{Clone: func(v [200]byte) [200]byte { return v }})
	if err != nil {
		t.Fatal(err)
	}
	for k := range uint64(100) {
		s.SetCurrentKeyWord(k, int(k%4))
		tbl.Insert().Val = int64(k)
		big.Insert().Val[0] = byte(k)
	}
	lines := make([]uintptr, 0, 64)
	found := 0
	for k := range uint64(100) {
		s.SetCurrentKeyWord(k, int(k%4))
		lines = s.CurrentLines(lines[:0])
		var p Probe
		for _, c := range []struct {
			tab interface{ Probe(*Probe) bool }
			at  func() (uintptr, uintptr)
		}{
			{tbl, func() (uintptr, uintptr) {
				e := tbl.Probed(&p)
				return uintptr(unsafe.Pointer(e)), unsafe.Sizeof(*e)
			}},
			{big, func() (uintptr, uintptr) {
				e := big.Probed(&p)
				return uintptr(unsafe.Pointer(e)), unsafe.Sizeof(*e)
			}},
		} {
			c.tab.Probe(&p)
			at, size := c.at()
			if at == 0 {
				continue // not where the probe looks
			}
			found++
			for l := at &^ 63; l < at+size; l += 64 {
				if !slices.Contains(lines, l) {
					t.Fatalf("key %d: the entry's line %#x is not among %#x", k, l, lines)
				}
			}
		}
		for _, l := range lines {
			if l%64 != 0 {
				t.Fatalf("key %d: %#x is not a line's address", k, l)
			}
		}
	}
	if found < 150 {
		t.Fatalf("Probed found %d of 200 entries", found)
	}
	k := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		s.SetCurrentKeyWord(k%100, int(k%4))
		lines = s.CurrentLines(lines[:0])
		k++
	}); a != 0 {
		t.Fatalf("CurrentLines: %.1f allocations per call", a)
	}
}

// fastForward stands for snapshots taken and dropped until the store's
// version is v (none of them takes place: no entry changes).
func fastForward(s *Store, v uint64) { s.snapVer = v }

// TestVersionsComeRound: a slot keeps 32 bits of the snapshot version,
// so a version comes round after 2^32 snapshots; Store.Snapshot ages
// every slot's version every 2^31 snapshots, before that can make an old
// entry look written since the last snapshot (and then modified in place
// under a snapshot that shares it). Snapshots fast-forwarded through
// whole rounds of versions, each up to the next aging: an entry untouched
// since a snapshot that is still being read is copied on its first write,
// and the snapshot reads as it was taken. (Without the aging, this fails.)
// The model test then runs across an aging.
func TestVersionsComeRound(t *testing.T) {
	rng := keygroup.Range{Start: 0, End: 1}
	for _, rounds := range []int{2, 3, 4, 7} { // aging steps of 2^31 versions
		s := NewStore(rng, 128, clock.NewManual(0))
		fastForward(s, 5)
		tbl, err := NewTable(s, snapshot.StateMeta{Name: "list", Kind: snapshot.KindValue}, listOps())
		if err != nil {
			t.Fatal(err)
		}
		model := map[string][]int64{}
		for k := range 50 { // enough keys for several pages
			key := []byte{byte(k)}
			s.SetCurrentKey(key, k%2)
			tbl.Insert().Val = []int64{int64(k)}
			model[modelKey(k%2, key, nil)] = []int64{int64(k)}
		}
		first := takeSnapshot(s, model) // version 6; the entries' is 5
		if rounds%2 == 1 {
			rounds++ // to a whole round of 32 bits
		}
		for r := 1; r <= rounds; r++ {
			fastForward(s, uint64(r)<<31-1)
			s.Snapshot() // ages every entry, then version r<<31
		}
		// Then the version whose low 32 bits are the entries' first
		// version again: writing each in place must not change the first
		// snapshot.
		fastForward(s, uint64(rounds)<<31+4)
		s.Snapshot()
		for k := range 50 {
			s.SetCurrentKey([]byte{byte(k)}, k%2)
			e := tbl.Writable(tbl.Lookup())
			e.Val[0] = -1
		}
		checkSnapshot(t, rounds, rng, first)
	}
	t.Run("model", func(t *testing.T) {
		testTableAgainstModelFrom(t, keygroup.Range{Start: 3, End: 10}, []keygroup.Range{{Start: 3, End: 6}, {Start: 7, End: 10}}, false, 1<<31-30)
	})
}
