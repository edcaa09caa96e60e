package pebblekv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// mergeAll merges ops (oldest first) with m as Pebble would: forward (the
// newest operand, then MergeOlder down to the oldest) or backward (the
// oldest, then MergeNewer). The operand buffer is reused and scribbled over
// after each call, as Pebble may reuse its buffers.
func mergeAll(t *testing.T, m *pebble.Merger, ops [][]byte, forward bool) []byte {
	t.Helper()
	var buf []byte
	pass := func(op []byte) []byte {
		buf = append(buf[:0], op...)
		return buf
	}
	scribble := func() {
		for i := range buf {
			buf[i] = 0xEE
		}
	}
	var vm pebble.ValueMerger
	var err error
	if forward {
		vm, err = m.Merge(nil, pass(ops[len(ops)-1]))
		scribble()
		for i := len(ops) - 2; i >= 0 && err == nil; i-- {
			err = vm.MergeOlder(pass(ops[i]))
			scribble()
		}
	} else {
		vm, err = m.Merge(nil, pass(ops[0]))
		scribble()
		for i := 1; i < len(ops) && err == nil; i++ {
			err = vm.MergeNewer(pass(ops[i]))
			scribble()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	out, closer, err := vm.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	out = slices.Clone(out)
	if closer != nil {
		closer.Close()
	}
	return out
}

// The merger's result is byte-identical to pebble.DefaultMerger's (which
// is why it may keep its name), in both merge directions, for operands of
// any size including empty ones.
func TestListMergerMatchesDefault(t *testing.T) {
	if listMerger.Name != "pebble.concatenate" || listMerger.Name != pebble.DefaultMerger.Name {
		t.Fatalf("merger name %q: must stay pebble.DefaultMerger's, which existing databases and checkpoints persist", listMerger.Name)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 1000 {
		ops := make([][]byte, 1+r.IntN(40))
		for i := range ops {
			size := r.IntN(20)
			if r.IntN(8) == 0 { // large: own allocations and joins
				size = r.IntN(3000)
			}
			ops[i] = make([]byte, size)
			for j := range ops[i] {
				ops[i][j] = byte(r.IntN(256))
			}
		}
		want := bytes.Join(ops, nil)
		for _, forward := range []bool{true, false} {
			got := mergeAll(t, listMerger, ops, forward)
			def := mergeAll(t, pebble.DefaultMerger, ops, forward)
			if !bytes.Equal(got, want) || !bytes.Equal(def, want) {
				t.Fatalf("trial %d forward=%v: got %x, default %x, want %x", trial, forward, got, def, want)
			}
		}
	}
}

// Mixing directions in one merge is outside Pebble's contract, but the
// merger still concatenates in order.
func TestListMergerMixedDirections(t *testing.T) {
	vm, _ := listMerger.Merge(nil, []byte("c"))
	vm.MergeNewer([]byte("d"))
	vm.MergeOlder([]byte("b"))
	vm.MergeOlder([]byte("a"))
	vm.MergeNewer([]byte("e"))
	vm.MergeOlder([]byte("0123456789"))
	vm.MergeNewer([]byte("f"))
	out, _, _ := vm.Finish(true)
	if string(out) != "0123456789abcdef" {
		t.Fatalf("got %q, want 0123456789abcdef", out)
	}
}

func listOf(t *testing.T, tb *Table) []uint64 {
	t.Helper()
	var out []uint64
	if err := tb.ScanList(func(e []byte, _ int64) bool {
		out = append(out, binary.BigEndian.Uint64(e))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func appendRange(t *testing.T, tb *Table, from, to int) {
	t.Helper()
	var e [8]byte
	for i := from; i < to; i++ {
		binary.BigEndian.PutUint64(e[:], uint64(i))
		if err := tb.Append(e[:], 0); err != nil {
			t.Fatal(err)
		}
	}
}

func seq(from, to int) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, uint64(i))
	}
	return s
}

// A list built from appends spread over the memtable, flushed SSTs, a
// compaction and a SetList base reads back in order, and reads the same
// through an iterator backwards (MergeNewer).
func TestListAppendAcrossLevels(t *testing.T) {
	d := openTest(t, t.TempDir())
	defer d.Close()
	tb := listTable(t, d, "l")
	setTestKey(d, 7)
	appendRange(t, tb, 0, 1000)
	if err := d.db.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, tb, 1000, 1500)
	if err := d.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.db.Compact(t.Context(), []byte{0}, []byte{0xFF, 0xFF, 0xFF}, true); err != nil {
		t.Fatal(err)
	}
	appendRange(t, tb, 1500, 2000)
	if got := listOf(t, tb); !slices.Equal(got, seq(0, 2000)) {
		t.Fatalf("list has %d elements, first %v", len(got), got[:min(5, len(got))])
	}

	// Backwards: Pebble merges with MergeNewer.
	setTestKey(d, 7)
	p := slices.Clone(tb.prefix())
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Last() {
		t.Fatal("no list value iterating backwards")
	}
	v := slices.Clone(it.Value())
	it.Close()
	fwd, closer, err := d.db.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v, fwd) {
		t.Fatalf("backward value (%d bytes) differs from forward (%d bytes)", len(v), len(fwd))
	}
	closer.Close()

	// SetList replaces the list; appends after it extend the new base.
	if err := tb.SetList([][]byte{binary.BigEndian.AppendUint64(nil, 42)}, nil); err != nil {
		t.Fatal(err)
	}
	appendRange(t, tb, 43, 45)
	if got := listOf(t, tb); !slices.Equal(got, []uint64{42, 43, 44}) {
		t.Fatalf("after SetList: %v", got)
	}
}

// openWithDefaultMerger opens dir as the backend did before listMerger:
// the same options with pebble.DefaultMerger.
func openWithDefaultMerger(t *testing.T, dir string) *pebble.DB {
	t.Helper()
	po, unref := pebbleOptions(Options{})
	po.Merger = pebble.DefaultMerger
	db, err := pebble.Open(dir, po)
	unref()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Databases (and so native checkpoints, which are Pebble checkpoints of
// them) written with pebble.DefaultMerger open with listMerger and read
// the same lists, and the other way round: the merger name persisted in
// OPTIONS and in each SST's properties is unchanged.
func TestListMergerOpensDefaultMergerDB(t *testing.T) {
	dir := t.TempDir()
	// Written with the default merger: metadata through the backend's
	// layout, list operands, flushed to SSTs (the DB has no WAL).
	d := openTest(t, dir)
	tb := listTable(t, d, "l")
	setTestKey(d, 3)
	key := slices.Clone(tb.prefix())
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	old := openWithDefaultMerger(t, dir)
	var e [8]byte
	for i := range 300 {
		binary.BigEndian.PutUint64(e[:], uint64(i))
		op := binary.AppendUvarint(nil, 8)
		if err := old.Merge(key, append(op, e[:]...), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if i == 100 {
			if err := old.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	// A native checkpoint of it, opened with listMerger.
	ckpt := t.TempDir() + "/ckpt"
	{
		db := openWithDefaultMerger(t, dir)
		if err := db.Checkpoint(ckpt); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	for _, dir := range []string{dir, ckpt} {
		d := openTest(t, dir)
		tb := listTable(t, d, "l")
		setTestKey(d, 3)
		if got := listOf(t, tb); !slices.Equal(got, seq(0, 300)) {
			t.Fatalf("%s: list read with listMerger: %d elements", dir, len(got))
		}
		appendRange(t, tb, 300, 400)
		if err := d.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.db.Compact(t.Context(), []byte{0}, []byte{0xFF, 0xFF, 0xFF}, true); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// And back: what listMerger wrote and compacted opens with the default merger.
	db := openWithDefaultMerger(t, dir)
	defer db.Close()
	v, closer, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	var want []byte
	for i := range 400 {
		want = binary.AppendUvarint(want, 8)
		want = binary.BigEndian.AppendUint64(want, uint64(i))
	}
	if !bytes.Equal(v, want) {
		t.Fatalf("read with pebble.DefaultMerger: %d bytes, want %d", len(v), len(want))
	}
}

// A database written with a differently named merger does not open: the
// name check this change relies on is real.
func TestMergerNameIsChecked(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir)
	d.Close()
	po, unref := pebbleOptions(Options{})
	defer unref()
	po.Merger = &pebble.Merger{Merge: listMerger.Merge, Name: "weir.list"}
	db, err := pebble.Open(dir, po)
	if err == nil {
		db.Close()
		t.Fatal("opened a pebble.concatenate database with merger weir.list")
	}
	if !strings.Contains(err.Error(), "merger") {
		t.Fatalf("unexpected error: %v", err)
	}
}

// BenchmarkListMerger is the merger alone, merging as a read or a
// compaction does (forward: the newest operand, then MergeOlder): n
// operands of 9 bytes (an 8-byte element), and a base of 1 MiB under 100
// such operands (a compaction of a long list with a few new appends).
func BenchmarkListMerger(b *testing.B) {
	op := make([]byte, 9)
	base := make([]byte, 1<<20)
	for _, m := range []*pebble.Merger{pebble.DefaultMerger, listMerger} {
		name := "default"
		if m == listMerger {
			name = "list"
		}
		for _, c := range []struct {
			name string
			n    int
			base bool
		}{{"appends", 1_000, false}, {"appends", 10_000, false}, {"appends", 100_000, false}, {"base+appends", 100, true}} {
			if m == pebble.DefaultMerger && c.n == 100_000 && testing.Short() {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s/n=%d", name, c.name, c.n), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					vm, _ := m.Merge(nil, op)
					for range c.n - 1 {
						vm.MergeOlder(op)
					}
					if c.base {
						vm.MergeOlder(base)
					}
					vm.Finish(true)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.n), "ns/operand")
			})
		}
	}
}
