package typedstore

import (
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/testseed"
)

// OwnedWord finds an 8-byte key's entry without setting the key. Against
// SetCurrentKeyWord + Lookup on random keys, through growth (small and
// multi-page tables, both lookup orders) and snapshots: whenever it returns
// an entry, that is the key's entry and no snapshot shares it; it returns
// none for an absent key, a key group outside the range or under a
// namespace; and it finds most keys of a table no snapshot shares.
// MemoWord, which answers from what OwnedWord found before, is held to the
// same, through deletes too (which free slots the memo may name), with
// few keys (the memo on) and many (the memo resized, then off).
func TestOwnedWordMatchesLookup(t *testing.T) {
	r := testseed.Rand(t, 5)
	for _, c := range []struct{ prefFirst, keys, snapshots int }{{1 << 30, 20000, 10}, {0, 20000, 10}, {1 << 30, 3000, 1}} {
		prefFirst := c.prefFirst
		rng := keygroup.Range{Start: 4, End: 7}
		s := NewStore(rng, 128, clock.NewManual(0))
		tbl, err := NewTable(s, snapshot.StateMeta{Name: "w", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
		if err != nil {
			t.Fatal(err)
		}
		tbl.prefFirst = prefFirst
		kgOf := func(k uint64) int { return 4 + int(k%4) }
		model := map[uint64]int64{}
		memoHits := 0
		check := func(step int, k uint64) {
			t.Helper()
			m := tbl.MemoWord(k)
			e := tbl.OwnedWord(kgOf(k), k)
			s.SetCurrentKeyWord(k, kgOf(k))
			want := tbl.Lookup()
			if m != nil {
				memoHits++
				if m != want || slotOf(m).ver != uint32(s.snapVer) {
					t.Fatalf("prefFirst %d, step %d, key %d: MemoWord's entry is not Lookup's or is shared", prefFirst, step, k)
				}
			}
			switch {
			case e != nil && e != want:
				t.Fatalf("prefFirst %d, step %d, key %d: OwnedWord's entry is not Lookup's", prefFirst, step, k)
			case e != nil && slotOf(e).ver != uint32(s.snapVer):
				t.Fatalf("prefFirst %d, step %d, key %d: OwnedWord returned an entry a snapshot shares", prefFirst, step, k)
			case e != nil && e.Val != model[k]:
				t.Fatalf("prefFirst %d, step %d, key %d: value %d, want %d", prefFirst, step, k, e.Val, model[k])
			}
			if _, ok := model[k]; !ok && e != nil {
				t.Fatalf("prefFirst %d, step %d, key %d: OwnedWord found an absent key", prefFirst, step, k)
			}
		}
		for step := range 60000 {
			k := uint64(r.IntN(c.keys)) * 0x9e3779b97f4a7c15 >> 20
			switch op := r.IntN(1000); {
			case op < 600: // write, through MemoWord or OwnedWord when one finds the entry
				v := r.Int64()
				if e := tbl.MemoWord(k); e != nil {
					e.Val = v
				} else if e := tbl.OwnedWord(kgOf(k), k); e != nil {
					e.Val = v
				} else {
					s.SetCurrentKeyWord(k, kgOf(k))
					e, _ := tbl.Upsert()
					e.Val = v
				}
				model[k] = v
			case op < 605:
				s.SetCurrentKeyWord(k, kgOf(k))
				tbl.Delete()
				delete(model, k)
			case op < 1000-c.snapshots:
				check(step, k)
			default:
				s.Snapshot()
			}
		}
		// A quiet table: most keys are found, none under a namespace or
		// outside the range.
		s.Snapshot()
		for k := range model {
			s.SetCurrentKeyWord(k, kgOf(k))
			e, _ := tbl.Upsert()
			e.Val = model[k]
		}
		found := 0
		for k := range model {
			check(-1, k)
			if tbl.OwnedWord(kgOf(k), k) != nil {
				found++
			}
			if tbl.OwnedWord(3, k) != nil || tbl.OwnedWord(8, k) != nil {
				t.Fatalf("prefFirst %d: OwnedWord found key %d outside the store's key groups", prefFirst, k)
			}
		}
		// Over 1,300 processes (each with its own hash seeds) the 3,000-key
		// case found 91.9-97% (mean 94.5%): the floor leaves room for that
		// tail, which one seed does not reproduce.
		if found < len(model)*85/100 {
			t.Fatalf("prefFirst %d: OwnedWord found %d of %d keys", prefFirst, found, len(model))
		}
		var some uint64
		for k := range model {
			some = k
			break
		}
		s.SetCurrentKeyWord(some, kgOf(some))
		s.SetCurrentNamespace([]byte{1})
		if tbl.OwnedWord(kgOf(some), some) != nil {
			t.Fatalf("prefFirst %d: OwnedWord found a key under a namespace", prefFirst)
		}
		s.SetCurrentNamespace(nil)
		// The random phase's hits depend on the seed (a snapshot empties
		// the memo, and a key must be found twice between snapshots), so
		// the memo's worth is held on a quiet table: every key was found
		// once above, so a second pass is answered by the memo, except
		// keys whose place another key took (about a sixth at 2-4 places
		// a key).
		quiet := 0
		for k := range model {
			before := memoHits
			check(-2, k)
			quiet += memoHits - before
		}
		if c.keys < memoMaxKeys && quiet < len(model)*7/10 {
			t.Fatalf("prefFirst %d: MemoWord answered %d of %d keys of a quiet table", prefFirst, quiet, len(model))
		}
		t.Logf("prefFirst %d: %d keys, %d found, %d memo hits (%d on the quiet table), %d groups' slots", prefFirst, len(model), found, memoHits, quiet, tbl.groups[0].t.size())
	}
}

// A deleted key's memo place must go with it: its slot is zeroed (an
// entry of version 0, which is current before the first snapshot) and
// may then hold another key. Before any snapshot (whose emptying of the
// memo would hide the bug): MemoWord of the deleted key is nil right after
// the delete and after another key took its slot.
func TestMemoWordForgetsDeletedKey(t *testing.T) {
	s := NewStore(keygroup.Range{Start: 0, End: 1}, 128, clock.NewManual(0))
	tbl, err := NewTable(s, snapshot.StateMeta{Name: "w", Kind: snapshot.KindValue}, Ops[int64]{Clone: func(v int64) int64 { return v }})
	if err != nil {
		t.Fatal(err)
	}
	const a = uint64(7)
	s.SetCurrentKeyWord(a, 0)
	e, _ := tbl.Upsert()
	e.Val = 1
	if tbl.OwnedWord(0, a) != e || tbl.MemoWord(a) != e { // OwnedWord turns the memo on
		t.Fatal("the memo did not take the key's entry")
	}
	tbl.Delete()
	if m := tbl.MemoWord(a); m != nil {
		t.Fatalf("MemoWord found the deleted key (value %d, version %d)", m.Val, slotOf(m).ver)
	}
	// Another key into the freed slot: try keys until one lands there.
	for b := uint64(100); b < 10000; b++ {
		s.SetCurrentKeyWord(b, 0)
		nb, _ := tbl.Upsert()
		nb.Val = 2
		if nb == e {
			if m := tbl.MemoWord(a); m != nil {
				t.Fatalf("MemoWord of the deleted key found key %d's entry", b)
			}
			return
		}
		tbl.Delete()
	}
	t.Fatal("no key took the freed slot")
}
