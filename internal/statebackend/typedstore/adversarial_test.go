package typedstore

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/testseed"
)

// noNamespaceImage is the image the store computes for key with no namespace.
func noNamespaceImage(key []byte) keyImage { return imageOf(mapKey(nil, key, nil)) }

// collidingKeys returns n distinct keys (no namespace) whose home group is
// 0 in every table of up to 256 groups. With sameH2, all of them also have
// control byte h2 and preferred slot pref. Lengths are short and long mixed
// unless onlyShort.
func collidingKeys(r *rand.Rand, n int, sameH2 bool, h2want, pref uint64, onlyShort bool) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	buf := make([]byte, 64)
	for len(out) < n {
		var l int
		if onlyShort || r.IntN(4) > 0 {
			l = r.IntN(inlineKey) // 0..15: short map key
		} else {
			l = inlineKey + r.IntN(20) // long map key
		}
		k := buf[:l]
		var x, zero uint64 // 8 random bytes, and which of them are zero (half)
		for i := range k {
			if i%8 == 0 {
				x, zero = r.Uint64(), r.Uint64()
			}
			k[i] = 0
			if zero>>(i%8)&1 == 1 {
				k[i] = byte(x >> (8 * (i % 8)))
			}
		}
		var im keyImage
		if l < inlineKey {
			im = plainImage(k)
		} else {
			im = noNamespaceImage(k)
		}
		if (im.hn>>8)&255 != 0 {
			continue
		}
		// (Long keys need not share the preferred slot: finding them is slow
		// and lookups of long keys do not read it.)
		if sameH2 && (h2(im.hn) != h2want || l < inlineKey && prefAt(im.hn) != pref) {
			continue
		}
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		out = append(out, slices.Clone(k))
	}
	return out
}

// checkSlots checks the structural invariants of one key group's table.
func checkSlots[E any](t *testing.T, where string, sl *slots[E], n int) {
	t.Helper()
	if len(sl.ctrl) == 0 {
		if n != 0 || sl.size() != 0 {
			t.Fatalf("%s: empty ctrl with n=%d, %d slots", where, n, sl.size())
		}
		return
	}
	if sl.size() != 8*len(sl.ctrl) {
		t.Fatalf("%s: %d slots for %d groups", where, sl.size(), len(sl.ctrl))
	}
	full, dead, empty := 0, 0, 0
	usedLong := map[uint64]bool{}
	for i := range sl.size() {
		c := sl.ctrl[i/8] >> (8 * (i % 8)) & 0xff
		s := sl.at(i)
		switch c {
		case ctrlEmpty, ctrlDeleted:
			if c == ctrlEmpty {
				empty++
			} else {
				dead++
			}
			if s.hn != 0 || s.w0 != 0 || s.w1 != 0 {
				t.Fatalf("%s: free slot %d not zero: %+v", where, i, *s)
			}
		default:
			if c >= 0x80 {
				t.Fatalf("%s: bad ctrl byte %#x at %d", where, c, i)
			}
			full++
			hn := sl.hashOf(s)
			if s.hn == 0 || c != h2(hn) || uint32(hn) != s.hn {
				t.Fatalf("%s: slot %d ctrl %#x, hn %#x, the key's %#x", where, i, c, s.hn, hn)
			}
			if s.hn&0xff == longKey {
				if usedLong[s.w0] {
					t.Fatalf("%s: long index %d used twice", where, s.w0)
				}
				usedLong[s.w0] = true
			}
			// No group between home and here may have an empty byte.
			gmask := uint64(len(sl.ctrl) - 1)
			for g := homeGroup(hn, gmask); g != uint64(i/8); g = (g + 1) & gmask {
				if matchEmpty(sl.ctrl[g]) != 0 {
					t.Fatalf("%s: slot %d (home %d) is behind group %d with an empty byte", where, i, homeGroup(hn, gmask), g)
				}
			}
			// find must reach it.
			im := keyImage{hn: hn, w0: s.w0, w1: s.w1}
			var buf []byte
			if j := sl.find(&im, sl.key(i, &buf)); j != i {
				t.Fatalf("%s: find of slot %d's key gives %d", where, i, j)
			}
		}
	}
	if full != n || dead != sl.dead || empty == 0 {
		t.Fatalf("%s: full %d (n %d), dead %d (counted %d), empty %d", where, full, n, dead, sl.dead, empty)
	}
	for _, f := range sl.free {
		if usedLong[f] || sl.long[f] != "" {
			t.Fatalf("%s: free long index %d in use (%q)", where, f, sl.long[f])
		}
	}
	if len(usedLong)+len(sl.free) != len(sl.long) {
		t.Fatalf("%s: %d long keys used + %d free != %d", where, len(usedLong), len(sl.free), len(sl.long))
	}
}

// TestAdversarialCollidingKeys runs the model test on keys that all share a home
// group (and, in the second variant, also h2 and the preferred slot), with
// heavy delete/insert churn so that tombstones pile up and same-size
// rehashes happen, interleaved with snapshots that are checked later, and
// the table's invariants checked after every step.
func TestAdversarialCollidingKeys(t *testing.T) {
	for _, sameH2 := range []bool{false, true} {
		t.Run(fmt.Sprint("sameH2=", sameH2), func(t *testing.T) {
			r := testseed.Rand(t, 7)
			nkeys := 300
			if sameH2 {
				nkeys = 40
			}
			keys := collidingKeys(r, nkeys, sameH2, r.Uint64N(128), r.Uint64N(8), false)
			rng := keygroup.Range{Start: 0, End: 0}
			meta := snapshot.StateMeta{Name: "list", Kind: snapshot.KindValue}
			s := NewStore(rng, 128, clock.NewManual(0))
			tbl, err := NewTable(s, meta, listOps())
			if err != nil {
				t.Fatal(err)
			}
			model := map[string][]int64{}
			var snaps []pendingSnap
			var cur []byte
			setKey := func() {
				cur = keys[r.IntN(len(keys))]
				s.SetCurrentKey(cur, 0)
			}
			setKey()
			sameSize, grows := 0, 0
			steps := 60_000
			if testing.Short() {
				steps = 8_000
			}
			for step := range steps {
				mk := modelKey(0, cur, nil)
				size := tbl.groups[0].t.size()
				dead := tbl.groups[0].t.dead
				switch op := r.IntN(100); {
				case op < 35:
					setKey()
				case op < 50:
					checkRead(t, step, tbl, model, mk)
				case op < 75:
					modelWrite(r, tbl, model, mk)
				case op < 98:
					tbl.Delete()
					delete(model, mk)
				case op < 99:
					snaps = append(snaps, takeSnapshot(s, model))
				default:
					if len(snaps) > 0 {
						i := r.IntN(len(snaps))
						checkSnapshot(t, step, rng, snaps[i])
						snaps = slices.Delete(snaps, i, i+1)
					}
				}
				if ns := tbl.groups[0].t.size(); ns > size {
					grows++
				} else if ns == size && tbl.groups[0].t.dead < dead && dead-tbl.groups[0].t.dead > 1 {
					sameSize++
				}
				if step%5 == 0 || tbl.groups[0].t.size() != size {
					checkSlots(t, fmt.Sprintf("step %d", step), &tbl.groups[0].t, tbl.groups[0].n)
				}
				if tbl.Len() != len(model) {
					t.Fatalf("step %d: %d entries, model %d", step, tbl.Len(), len(model))
				}
				// Every key, through both lookup paths.
				if step%97 == 0 {
					for _, k := range keys {
						s.SetCurrentKey(k, 0)
						_, ok := model[modelKey(0, k, nil)]
						if (tbl.Lookup() != nil) != ok {
							t.Fatalf("step %d: key %x present %v, model %v", step, k, tbl.Lookup() != nil, ok)
						}
					}
					s.SetCurrentKey(cur, 0)
				}
			}
			for _, p := range snaps {
				checkSnapshot(t, -1, rng, p)
			}
			t.Logf("grows %d, same-size rehashes (approx) %d, final size %d", grows, sameSize, tbl.groups[0].t.size())
		})
	}
}

// TestAdversarialLongKeyReuseAfterSnapshot deletes long keys, snapshots, and
// inserts new long keys that take the freed places of the long list.
func TestAdversarialLongKeyReuseAfterSnapshot(t *testing.T) {
	rng := keygroup.Range{Start: 0, End: 0}
	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, err := NewTable(s, snapshot.StateMeta{Name: "l", Kind: snapshot.KindValue}, listOps())
	if err != nil {
		t.Fatal(err)
	}
	long := func(i int) []byte { return fmt.Appendf(nil, "a-long-key-number-%04d", i) }
	model := map[string][]int64{}
	for i := range 20 {
		s.SetCurrentKey(long(i), 0)
		tbl.Insert().Val = []int64{int64(i)}
		model[modelKey(0, long(i), nil)] = []int64{int64(i)}
	}
	for i := 0; i < 20; i += 2 {
		s.SetCurrentKey(long(i), 0)
		tbl.Delete()
		delete(model, modelKey(0, long(i), nil))
	}
	snap := pendingSnap{want: maps.Clone(model), sources: s.Snapshot()}
	for i := 100; i < 110; i++ { // reuse the 10 free places
		s.SetCurrentKey(long(i), 0)
		tbl.Insert().Val = []int64{int64(i)}
	}
	for i := 1; i < 20; i += 2 { // and free others
		s.SetCurrentKey(long(i), 0)
		tbl.Delete()
	}
	checkSnapshot(t, 0, rng, snap)
	checkSlots(t, "end", &tbl.groups[0].t, tbl.groups[0].n)
}

// TestAdversarialCachedEntryAcrossSnapshot: Lookup caches the entry, Snapshot
// does not change the epoch; writes through Writable must not reach the
// snapshot, and Lookup must see the new value.
func TestAdversarialCachedEntryAcrossSnapshot(t *testing.T) {
	rng := keygroup.Range{Start: 0, End: 0}
	s := NewStore(rng, 128, clock.NewManual(0))
	a, _ := NewTable(s, snapshot.StateMeta{Name: "a", Kind: snapshot.KindValue}, listOps())
	b, _ := NewTable(s, snapshot.StateMeta{Name: "b", Kind: snapshot.KindValue}, listOps())
	for _, key := range [][]byte{{1}, bytes.Repeat([]byte{2}, 40)} {
		s.SetCurrentKey(key, 0)
		a.Insert().Val = []int64{1}
		b.Insert().Val = []int64{1}
		e := a.Lookup()
		_ = b.Lookup()
		want := map[string][]int64{modelKey(0, key, nil): {1}}
		snaps := s.Snapshot()
		w := a.Writable(a.Lookup())
		w.Val[0] = 2
		if a.Lookup().Val[0] != 2 || e.Val[0] != 1 {
			t.Fatalf("after write: lookup %v, old entry %v", a.Lookup().Val, e.Val)
		}
		b.Writable(b.Lookup()).Val[0] = 3
		// both tables' snapshots still 1 for this key
		for _, src := range snaps {
			got := map[string][]int64{}
			src.KeyGroup(0, func(se snapshot.Entry) error {
				got[modelKey(0, se.Key, se.Namespace)] = decodeList(se.Value)
				return nil
			})
			if got[modelKey(0, key, nil)][0] != 1 {
				t.Fatalf("%s: snapshot changed: %v (want %v)", src.Meta().Name, got, want)
			}
		}
		a.Delete()
		b.Delete()
	}
}

// TestAdversarialCurStale exercises the lazy map key: CurrentKey, namespaces,
// Restore with a stale cur, and long keys.
func TestAdversarialCurStale(t *testing.T) {
	r := testseed.Rand(t, 3)
	rng := keygroup.Range{Start: 0, End: 3}
	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, _ := NewTable(s, snapshot.StateMeta{Name: "v", Kind: snapshot.KindValue}, listOps())
	model := map[string][]int64{}
	key := []byte{}
	var ns []byte
	s.SetCurrentKey(key, 0)
	for step := range 50_000 {
		switch r.IntN(6) {
		case 0, 1:
			key = randomBytes(r)
			s.SetCurrentKey(key, int(len(key)%4))
		case 2:
			ns = nil
			if r.IntN(2) == 0 {
				ns = randomBytes(r)
			}
			s.SetCurrentNamespace(ns)
		case 3:
			if got := s.CurrentKey(); !bytes.Equal(got, key) {
				t.Fatalf("step %d: CurrentKey %x, want %x", step, got, key)
			}
		default:
			mk := modelKey(len(key)%4, key, ns)
			e := tbl.Lookup()
			if _, ok := model[mk]; ok != (e != nil) {
				t.Fatalf("step %d: present %v, model %v", step, e != nil, ok)
			}
			if e == nil {
				tbl.Insert().Val = []int64{int64(step)}
				model[mk] = []int64{int64(step)}
			} else if !slices.Equal(e.Val, model[mk]) {
				t.Fatalf("step %d: %v want %v", step, e.Val, model[mk])
			}
		}
	}
	// Snapshot, restore into a fresh store whose current key is stale-cur.
	var buf bytes.Buffer
	if _, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: 128, Range: rng}, s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	rd, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	s2 := NewStore(rng, 128, clock.NewManual(0))
	t2, _ := NewTable(s2, snapshot.StateMeta{Name: "v", Kind: snapshot.KindValue}, listOps())
	s2.SetCurrentKey([]byte{9, 9}, 2)
	_ = t2.Lookup()
	if err := s2.Restore(rd); err != nil {
		t.Fatal(err)
	}
	if got := s2.CurrentKey(); !bytes.Equal(got, []byte{9, 9}) {
		t.Fatalf("CurrentKey after Restore %x", got)
	}
	if t2.Len() != len(model) {
		t.Fatalf("restored %d, want %d", t2.Len(), len(model))
	}
	if want, ok := model[modelKey(2, []byte{9, 9}, nil)]; (t2.Lookup() != nil) != ok || ok && !slices.Equal(t2.Lookup().Val, want) {
		t.Fatalf("current key after restore: %v, want %v", t2.Lookup(), want)
	}
}

// TestAdversarialImages: plainImage = imageOf(mapKey) for every short length
// with zero-heavy bytes, trailing zeros give distinct images, and no image
// has a zero or long length byte unless long.
func TestAdversarialImages(t *testing.T) {
	r := testseed.Rand(t, 4)
	for n := 0; n < inlineKey; n++ {
		for range 2000 {
			k := make([]byte, n)
			for i := range k {
				if r.IntN(3) == 0 {
					k[i] = byte(r.Uint32())
				}
			}
			im := plainImage(k)
			if im != noNamespaceImage(k) {
				t.Fatalf("%x: %+v vs %+v", k, im, noNamespaceImage(k))
			}
			if b := appendShort(nil, im.hn, im.w0, im.w1); !bytes.Equal(b, mapKey(nil, k, nil)) || im.hn&0xff == 0 || im.hn&0xff == longKey {
				t.Fatalf("%x: bytes %x hn %#x", k, b, im.hn)
			}
			if n+1 < inlineKey {
				z := append(slices.Clone(k), 0)
				if imageOf(mapKey(nil, k, []byte{0})) == noNamespaceImage(z) {
					t.Fatal("key|0 and key+0 same image")
				}
			}
		}
	}
	for _, l := range []int{inlineKey, inlineKey + 1, 200} {
		im := imageOf(make([]byte, l))
		if l > inlineKey && im.hn&0xff != longKey || l == inlineKey && im.hn&0xff != inlineKey {
			t.Fatalf("len %d: %#x", l, im.hn)
		}
	}
}

func TestAdversarialMatch(t *testing.T) {
	r := testseed.Rand(t, 5)
	for range 1_000_000 {
		var w uint64
		var bs [8]uint64
		for j := range 8 {
			switch r.IntN(4) {
			case 0:
				bs[j] = ctrlEmpty
			case 1:
				bs[j] = ctrlDeleted
			default:
				bs[j] = r.Uint64N(128)
			}
			w |= bs[j] << (8 * j)
		}
		b := r.Uint64N(128)
		if r.IntN(2) == 0 {
			b = bs[r.IntN(8)] & 0x7f
		}
		m, e := matchByte(w, b), matchEmpty(w)
		first := true
		for j := range 8 {
			hit := m>>(8*j+7)&1 != 0
			if bs[j] == b && !hit {
				t.Fatalf("false negative: w %#x b %#x", w, b)
			}
			if hit && bs[j] != b && (first || bs[j] >= 0x80) {
				t.Fatalf("false positive below any match or on a free byte: w %#x b %#x byte %d", w, b, j)
			}
			if bs[j] == b {
				first = false
			}
			if (e>>(8*j+7)&1 != 0) != (bs[j] == ctrlEmpty) {
				t.Fatalf("matchEmpty: w %#x", w)
			}
		}
		if m&^msbs != 0 || e&^msbs != 0 {
			t.Fatal("stray bits")
		}
	}
}

// TestAdversarialConcurrentSnapshot reads snapshots on other goroutines while
// the table keeps changing (run with -race).
func TestAdversarialConcurrentSnapshot(t *testing.T) {
	r := testseed.Rand(t, 6)
	rng := keygroup.Range{Start: 0, End: 1}
	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, _ := NewTable(s, snapshot.StateMeta{Name: "c", Kind: snapshot.KindValue}, listOps())
	keys := collidingKeys(r, 200, false, 0, 0, false)
	model := map[string][]int64{}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for step := range 30_000 {
		k := keys[r.IntN(len(keys))]
		kg := len(k) % 2
		s.SetCurrentKey(k, kg)
		mk := modelKey(kg, k, nil)
		switch r.IntN(10) {
		case 0, 1, 2:
			tbl.Delete()
			delete(model, mk)
		case 3:
			if step%50 == 0 {
				want := maps.Clone(model)
				for k, v := range want {
					want[k] = slices.Clone(v)
				}
				p := pendingSnap{want: want, sources: s.Snapshot()}
				wg.Add(1)
				go func() {
					defer wg.Done()
					got := map[string][]int64{}
					for _, src := range p.sources {
						for kg := 0; kg <= 1; kg++ {
							src.KeyGroup(kg, func(e snapshot.Entry) error {
								got[modelKey(kg, e.Key, e.Namespace)] = decodeList(e.Value)
								return nil
							})
						}
					}
					if !maps.EqualFunc(got, p.want, slices.Equal) {
						errs <- fmt.Errorf("snapshot differs: %d entries, want %d", len(got), len(p.want))
					}
				}()
			}
		default:
			e := tbl.Lookup()
			if e == nil {
				e = tbl.Insert()
			} else {
				e = tbl.Writable(e)
			}
			e.Val = append(e.Val, int64(step))
			if len(e.Val) > 1 {
				e.Val[0]++
			}
			model[mk] = slices.Clone(e.Val)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestAdversarialTombstoneRehash fills tables to just under the growth limit,
// deletes most keys (tombstones in full groups), snapshots, and inserts
// new keys until same-size rehashes happen; snapshots, lookups and
// invariants are checked throughout.
func TestAdversarialTombstoneRehash(t *testing.T) {
	r := testseed.Rand(t, 8)
	rng := keygroup.Range{Start: 0, End: 0}
	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, _ := NewTable(s, snapshot.StateMeta{Name: "t", Kind: snapshot.KindValue}, listOps())
	model := map[string][]int64{}
	var snaps []pendingSnap
	next := 0
	newKey := func() []byte {
		next++
		if r.IntN(5) == 0 {
			return fmt.Appendf(nil, "long-key-%020d", next)
		}
		return fmt.Appendf(nil, "k%d", next)
	}
	var live [][]byte
	sameSize, maxDead := 0, 0
	for round := range 400 {
		g := &tbl.groups[0]
		// insert up to the growth limit
		for !g.t.needsGrow(g.n) || g.t.size() == 0 {
			if g.t.size() == 0 {
				break
			}
			k := newKey()
			s.SetCurrentKey(k, 0)
			tbl.Insert().Val = []int64{int64(next)}
			model[modelKey(0, k, nil)] = []int64{int64(next)}
			live = append(live, k)
		}
		if g.t.size() == 0 {
			k := newKey()
			s.SetCurrentKey(k, 0)
			tbl.Insert().Val = []int64{int64(next)}
			model[modelKey(0, k, nil)] = []int64{int64(next)}
			live = append(live, k)
		}
		if r.IntN(3) == 0 {
			want := maps.Clone(model)
			snaps = append(snaps, pendingSnap{want: want, sources: s.Snapshot()})
		}
		// delete most
		r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		keep := len(live) / (2 + r.IntN(8))
		for _, k := range live[keep:] {
			s.SetCurrentKey(k, 0)
			tbl.Delete()
			delete(model, modelKey(0, k, nil))
		}
		live = live[:keep]
		maxDead = max(maxDead, g.t.dead)
		checkSlots(t, fmt.Sprintf("round %d after deletes", round), &g.t, g.n)
		// insert one at a time, watching for a same-size rehash
		for range 1 + r.IntN(40) {
			size, dead := g.t.size(), g.t.dead
			k := newKey()
			s.SetCurrentKey(k, 0)
			if tbl.Lookup() != nil {
				t.Fatal("new key present")
			}
			e := tbl.Insert()
			e.Val = []int64{int64(next)}
			model[modelKey(0, k, nil)] = []int64{int64(next)}
			live = append(live, k)
			if g.t.size() == size && dead > 1 && g.t.dead == 0 {
				sameSize++
			}
			checkSlots(t, fmt.Sprintf("round %d", round), &g.t, g.n)
		}
		for _, k := range live {
			s.SetCurrentKey(k, 0)
			e := tbl.Lookup()
			if e == nil || !slices.Equal(e.Val, model[modelKey(0, k, nil)]) {
				t.Fatalf("round %d: key %s: %v", round, k, e)
			}
			if r.IntN(4) == 0 {
				tbl.Writable(e).Val[0] = -e.Val[0]
				model[modelKey(0, k, nil)] = slices.Clone(tbl.Lookup().Val)
			}
		}
		if len(snaps) > 3 {
			checkSnapshot(t, round, rng, snaps[0])
			snaps = snaps[1:]
		}
	}
	for _, p := range snaps {
		checkSnapshot(t, -1, rng, p)
	}
	if sameSize == 0 {
		t.Fatalf("no same-size rehash happened (max dead %d)", maxDead)
	}
	t.Logf("same-size rehashes %d, max dead %d, final size %d", sameSize, maxDead, tbl.groups[0].t.size())
}

// TestAdversarialRestoreIntoSharedTable restores a snapshot into a store whose
// tables are shared with a snapshot still being read: merging into
// existing keys (values appended in place) and adding keys, short and long.
func TestAdversarialRestoreIntoSharedTable(t *testing.T) {
	appendOps := listOps()
	appendOps.Restore = func(e *Entry[[]int64], se snapshot.Entry, _ bool) error {
		e.Val = append(e.Val, decodeList(se.Value)...)
		return nil
	}
	rng := keygroup.Range{Start: 0, End: 1}
	meta := snapshot.StateMeta{Name: "x", Kind: snapshot.KindList}
	keys := [][]byte{{}, {1}, {0}, []byte("fifteen-bytes!!"), []byte("a key longer than sixteen bytes")}
	src := NewStore(rng, 128, clock.NewManual(0))
	st, _ := NewTable(src, meta, appendOps)
	for i, k := range keys {
		src.SetCurrentKey(k, i%2)
		st.Insert().Val = []int64{100 + int64(i)}
	}
	var buf bytes.Buffer
	if _, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: 128, Range: rng}, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	rd, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}

	s := NewStore(rng, 128, clock.NewManual(0))
	tbl, _ := NewTable(s, meta, appendOps)
	want := map[string][]int64{}
	for i, k := range keys[:3] {
		s.SetCurrentKey(k, i%2)
		v := make([]int64, 1, 8) // room to append in place
		v[0] = int64(i)
		tbl.Insert().Val = v
		want[modelKey(i%2, k, nil)] = []int64{int64(i)}
	}
	held := pendingSnap{want: maps.Clone(want), sources: s.Snapshot()}
	s.SetCurrentKey(keys[0], 0)
	_ = tbl.Lookup()
	if err := s.Restore(rd); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, 0, rng, held)
	for i, k := range keys {
		s.SetCurrentKey(k, i%2)
		e := tbl.Lookup()
		exp := []int64{100 + int64(i)}
		if i < 3 {
			exp = []int64{int64(i), 100 + int64(i)}
		}
		if e == nil || !slices.Equal(e.Val, exp) {
			t.Fatalf("key %q: %v, want %v", k, e, exp)
		}
	}
}

// TestAdversarialNamespaceRoundTrip is the smallest demonstration of the
// big-endian bug: keyImage.bytes and slots.key reinterpret the image's
// little-endian words as memory, so on a big-endian machine (s390x, ppc64)
// the lazily built map key is byte-swapped per word. A key inserted with
// no namespace is then not found again after a namespace was set and
// cleared, CurrentKey returns wrong bytes, and snapshots emit garbled keys.
// Passes on little-endian; fails under
//
//	GOARCH=s390x go test -c -o /tmp/h ./internal/statebackend/typedstore && qemu-s390x-static /tmp/h -test.run NamespaceRoundTrip
func TestAdversarialNamespaceRoundTrip(t *testing.T) {
	s := NewStore(keygroup.Range{Start: 0, End: 0}, 128, clock.NewManual(0))
	tbl, _ := NewTable(s, snapshot.StateMeta{Name: "v", Kind: snapshot.KindValue}, listOps())
	key := []byte{1, 2, 3, 4, 5}
	s.SetCurrentKey(key, 0)
	tbl.Insert().Val = []int64{7}
	if got := s.CurrentKey(); !bytes.Equal(got, key) {
		t.Errorf("CurrentKey %x, want %x", got, key)
	}
	s.SetCurrentNamespace([]byte("w"))
	s.SetCurrentNamespace(nil)
	if e := tbl.Lookup(); e == nil {
		t.Errorf("key %x not found after setting and clearing a namespace", key)
	}
	var got []byte
	for _, src := range s.Snapshot() {
		src.KeyGroup(0, func(e snapshot.Entry) error { got = bytes.Clone(e.Key); return nil })
	}
	if !bytes.Equal(got, key) {
		t.Errorf("snapshot key %x, want %x", got, key)
	}
}
