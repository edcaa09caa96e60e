package file_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/sink"
)

func partSink(dir string) file.Sink[string] {
	return file.Sink[string]{Dir: dir, Format: func(s string) string { return s }}
}

// visible reads dir as a job would: TextSource skips names starting with
// "." or "_".
func visible(t *testing.T, dir string) []string {
	t.Helper()
	got := readAll(t, file.TextSource{Path: dir}, 1)
	slices.Sort(got)
	return got
}

// hidden lists the names in dir that start with ".".
func hidden(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestSinkValidate(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	before := listTree(t, dir)
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		sink file.Sink[string]
		err  string
	}{
		{file.Sink[string]{Dir: p("out")}, ""},
		{file.Sink[string]{Dir: p("missing/deeper")}, ""},
		{file.Sink[string]{Dir: p("file")}, "output " + p("file") + " is not a directory; the exactly-once file sink writes a directory of part files"},
		{file.Sink[string]{Dir: p("file/sub")}, p("file") + " is not a directory"},
		{file.Sink[string]{Dir: ""}, "output directory is empty"},
		{file.Sink[string]{Dir: p("out"), Prefix: ".part"}, `prefix ".part"`},
		{file.Sink[string]{Dir: p("out"), Prefix: "_p"}, `prefix "_p"`},
		{file.Sink[string]{Dir: p("out"), Prefix: "a/b"}, `prefix "a/b"`},
		{file.Sink[string]{Dir: p("out"), Suffix: "/x"}, `suffix "/x"`},
		{file.Sink[string]{Dir: p("out"), Prefix: "data", Suffix: ".jsonl"}, ""},
	} {
		err := tc.sink.Validate(3)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc.sink, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: %v, want an error containing %q", tc.sink, err, tc.err)
		}
	}
	if after := listTree(t, dir); !slices.Equal(after, before) {
		t.Fatalf("Validate changed the file system:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := partSink(p("file")).CreateWriter(sinkCtx(0, 1)); err == nil {
		t.Fatal("CreateWriter into a regular file succeeded")
	}
}

// The two phases step by step: nothing is visible before its commit, a
// commit is idempotent, an empty interval makes no part, parts roll above
// RollSize, and a part gone under both names is an error naming it.
func TestSinkTwoPhases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := partSink(dir)
	s.RollSize = 10
	s.Suffix = ".txt"
	w, err := s.CreateWriter(sinkCtx(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCommitter(sinkCtx(1, 2))
	if cs, err := w.PrepareCommit(); err != nil || len(cs) != 0 {
		t.Fatalf("nothing written: PrepareCommit = %v, %v", cs, err)
	}
	if got := listTree(t, dir); len(got) != 1 {
		t.Fatalf("nothing written, yet the directory holds %v", got)
	}
	for _, l := range []string{"a", "b", "0123456789", "c"} { // "a\nb\n" is 4 bytes, then 11: a second part
		if err := w.Write(l, 0); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush(false)
	if got := visible(t, dir); len(got) != 0 {
		t.Fatalf("visible before the barrier: %q", got)
	}
	cs, err := w.PrepareCommit()
	if err != nil || len(cs) != 2 {
		t.Fatalf("PrepareCommit = %v, %v; want two parts (rolled at 10 bytes)", cs, err)
	}
	for i, cm := range cs {
		if !strings.HasPrefix(cm.InProgress, ".") || !strings.HasPrefix(cm.Final, "part-") || !strings.HasSuffix(cm.Final, fmt.Sprintf("-1-%d.txt", i)) {
			t.Fatalf("committable %+v", cm)
		}
	}
	if got := visible(t, dir); len(got) != 0 {
		t.Fatalf("visible before the commit: %q", got)
	}
	if err := w.Write("d", 0); err != nil { // the next interval, not committed
		t.Fatal(err)
	}
	if err := c.Commit(cs); err != nil {
		t.Fatal(err)
	}
	if got, want := visible(t, dir), []string{"0123456789", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("after the commit: %q, want %q", got, want)
	}
	if err := c.Commit(cs); err != nil {
		t.Fatalf("a second commit: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, cs[0].Final)); got != "a\nb\n0123456789\n" {
		t.Fatalf("first part holds %q", got)
	}
	// An empty part at the end of input.
	cs2, err := w.PrepareCommit()
	if err != nil || len(cs2) != 1 {
		t.Fatalf("PrepareCommit = %v, %v", cs2, err)
	}
	if cs3, err := w.PrepareCommit(); err != nil || len(cs3) != 0 {
		t.Fatalf("an empty interval: PrepareCommit = %v, %v", cs3, err)
	}
	w.Close()
	// Pending, not committed, survives Close (a checkpoint holds it).
	if got := hidden(t, dir); !slices.Equal(got, []string{cs2[0].InProgress}) {
		t.Fatalf("after Close: hidden %v, want the pending part", got)
	}
	os.Remove(filepath.Join(dir, cs2[0].InProgress))
	err = c.Commit(cs2)
	if err == nil || !strings.Contains(err.Error(), "cannot commit "+filepath.Join(dir, cs2[0].Final)) || !strings.Contains(err.Error(), cs2[0].InProgress) {
		t.Fatalf("commit of a part gone under both names: %v", err)
	}
	if err := c.Commit([]file.Committable{{InProgress: "../x", Final: "y"}}); err == nil {
		t.Fatal("a committable outside the directory was committed")
	}
}

// Writers of the same subtask in separate runs (resumed from the same
// checkpoint, say) never name a part alike.
func TestSinkNamesAreUnique(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range 20 {
		w, err := partSink(dir).CreateWriter(sinkCtx(0, 1))
		if err != nil {
			t.Fatal(err)
		}
		w.Write("x", 0)
		cs, err := w.PrepareCommit()
		if err != nil {
			t.Fatal(err)
		}
		if seen[cs[0].Final] {
			t.Fatalf("%s twice", cs[0].Final)
		}
		seen[cs[0].Final] = true
	}
}

// A writer closed after a failure deletes its open part and the parts it
// rolled but did not make pending.
func TestSinkCloseDeletesWhatNoCheckpointHolds(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	s.RollSize = 1
	w, _ := s.CreateWriter(sinkCtx(0, 1))
	w.Write("pending", 0)
	cs, _ := w.PrepareCommit()
	w.Write("rolled", 0)
	s.RollSize = -1
	w.Write("open", 0)
	if got := hidden(t, dir); len(got) != 3 {
		t.Fatalf("hidden %v, want 3 parts", got)
	}
	w.Close()
	if got := hidden(t, dir); !slices.Equal(got, []string{cs[0].InProgress}) {
		t.Fatalf("after Close: %v, want only the pending part", got)
	}
}

func TestSinkCommittableCodec(t *testing.T) {
	c := partSink("x").CommittableCodec()
	want := file.Committable{InProgress: ".part-0123456789abcdef-3-7.inprogress", Final: "part-0123456789abcdef-3-7"}
	enc := c.AppendEncode([]byte("z"), want)
	got, n, err := c.Decode(enc[1:])
	if err != nil || n != len(enc)-1 || got != want {
		t.Fatalf("decoded %+v, %d, %v", got, n, err)
	}
	for k := range len(enc) - 1 {
		if _, _, err := c.Decode(enc[1 : 1+k]); !errors.Is(err, codec.ErrTruncated) {
			t.Fatalf("cut to %d bytes: %v", k, err)
		}
	}
	enc[1] = 9
	if _, _, err := c.Decode(enc[1:]); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("unknown version: %v", err)
	}
}

// sinkSim runs a Sink the way the runtime runs a two-phase-commit sink,
// across attempts: a writer and a committer per subtask; at a checkpoint
// every subtask flushes, pre-commits and keeps its pending committables in
// the checkpoint; when a checkpoint completes, each subtask is notified in
// its own time and commits what checkpoints up to it pre-committed; a
// crash drops every writer (without Close, or with it), and the next
// attempt, at any parallelism, gets the pending committables of the last
// completed checkpoint redistributed as operator list state is, and each
// subtask commits its share before its first record. A checkpoint needs
// every subtask to have initialized (committed what it restored).
//
// It keeps the model: which records each committable holds, computed from
// the lines and RollSize, and which committables were committed.
type sinkSim struct {
	t        *testing.T
	rng      *rand.Rand
	dir      string
	sink     file.Sink[string]
	roll     int64
	attempt  int
	subs     []*simSub
	id       int64
	cps      map[int64][][]simPending // per checkpoint, each subtask's pending committables
	latest   int64                    // the latest completed checkpoint (0: none)
	restored [][]file.Committable     // per subtask of the current attempt, to commit at init

	contents  map[string][]string // final name -> its records
	committed map[string]bool
	records   int
}

type simSub struct {
	w       sink.CommittingWriter[string, file.Committable]
	c       sink.Committer[file.Committable]
	init    bool
	pending []simPending
	notify  int64 // commit up to this checkpoint when notified (0: nothing to do)
	cur     []string
	curSize int64
	closed  [][]string // parts rolled since the last PrepareCommit (model)
	wrote   bool
}

type simPending struct {
	cp int64
	c  file.Committable
}

func (s *sinkSim) start(p int) {
	s.subs = nil
	for i := range p {
		ctx := &fakeSinkCtx{subtask: i, p: p, attempt: s.attempt, checkpointing: true}
		w, err := s.sink.CreateWriter(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		c, err := s.sink.CreateCommitter(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		s.subs = append(s.subs, &simSub{w: w, c: c})
	}
	s.restored = make([][]file.Committable, p)
	if s.latest > 0 {
		var old [][][]byte
		codec := s.sink.CommittableCodec()
		for _, pend := range s.cps[s.latest] {
			var enc [][]byte
			for _, pc := range pend {
				enc = append(enc, codec.AppendEncode(nil, pc.c))
			}
			old = append(old, enc)
		}
		for i, enc := range sourcetest.Redistribute(old, p) {
			for _, e := range enc {
				c, _, err := codec.Decode(e)
				if err != nil {
					s.t.Fatal(err)
				}
				s.restored[i] = append(s.restored[i], c)
			}
		}
	}
}

// initialize commits what subtask i restored, as the runtime does before
// the subtask's first record.
func (s *sinkSim) initialize(i int) {
	sub := s.subs[i]
	if sub.init {
		return
	}
	sub.init = true
	if len(s.restored[i]) > 0 {
		s.commit(sub, s.restored[i])
	}
}

func (s *sinkSim) commit(sub *simSub, cs []file.Committable) {
	if err := sub.c.Commit(cs); err != nil {
		s.t.Fatalf("attempt %d: %v", s.attempt, err)
	}
	for _, c := range cs {
		s.committed[c.Final] = true
	}
}

func (s *sinkSim) write(i int) {
	s.initialize(i)
	sub := s.subs[i]
	line := fmt.Sprintf("a%d-s%d-r%d-%s", s.attempt, i, s.records, strings.Repeat("x", s.rng.IntN(30)))
	s.records++
	if err := sub.w.Write(line, 0); err != nil {
		s.t.Fatal(err)
	}
	sub.wrote = true
	sub.cur = append(sub.cur, line)
	sub.curSize += int64(len(line)) + 1
	if sub.curSize >= s.roll {
		sub.closed = append(sub.closed, sub.cur)
		sub.cur, sub.curSize = nil, 0
	}
}

func (s *sinkSim) checkpoint() {
	for i := range s.subs {
		s.initialize(i)
	}
	s.id++
	var snap [][]simPending
	for i, sub := range s.subs {
		if err := sub.w.Flush(false); err != nil {
			s.t.Fatal(err)
		}
		cs, err := sub.w.PrepareCommit()
		if err != nil {
			s.t.Fatal(err)
		}
		if len(sub.cur) > 0 {
			sub.closed = append(sub.closed, sub.cur)
			sub.cur, sub.curSize = nil, 0
		}
		if len(cs) != len(sub.closed) {
			s.t.Fatalf("attempt %d, subtask %d, checkpoint %d: %d committables, want %d parts", s.attempt, i, s.id, len(cs), len(sub.closed))
		}
		for k, c := range cs {
			if s.contents[c.Final] != nil {
				s.t.Fatalf("part %s made twice", c.Final)
			}
			s.contents[c.Final] = sub.closed[k]
			sub.pending = append(sub.pending, simPending{s.id, c})
		}
		sub.closed = nil
		snap = append(snap, slices.Clone(sub.pending))
	}
	s.cps[s.id] = snap
}

// complete completes the latest checkpoint; subtasks learn it one by one.
func (s *sinkSim) complete() {
	if s.id == 0 || s.cps[s.id] == nil || s.latest == s.id {
		return
	}
	s.latest = s.id
	for _, sub := range s.subs {
		sub.notify = s.id
	}
}

func (s *sinkSim) notify(i int) {
	sub := s.subs[i]
	if sub.notify == 0 {
		return
	}
	n := 0
	for n < len(sub.pending) && sub.pending[n].cp <= sub.notify {
		n++
	}
	sub.notify = 0
	if n == 0 {
		return
	}
	cs := make([]file.Committable, n)
	for k := range n {
		cs[k] = sub.pending[k].c
	}
	s.commit(sub, cs)
	sub.pending = sub.pending[n:]
}

// crash ends the attempt; the next one starts at parallelism p.
func (s *sinkSim) crash(p int) {
	for _, sub := range s.subs {
		if s.rng.IntN(2) == 0 {
			sub.w.Close() // a clean cancellation; else the process died
		}
	}
	// A checkpoint that did not complete is gone.
	for id := range s.cps {
		if id > s.latest {
			delete(s.cps, id)
		}
	}
	s.attempt++
	s.start(p)
}

// check reads the directory as a reader would: exactly the committed
// records, each committed file whole.
func (s *sinkSim) check(what string) {
	var want []string
	for f := range s.committed {
		want = append(want, s.contents[f]...)
		if got := readFile(s.t, filepath.Join(s.dir, f)); got != strings.Join(s.contents[f], "\n")+"\n" {
			s.t.Fatalf("%s: %s holds %q, want %q", what, f, got, s.contents[f])
		}
	}
	slices.Sort(want)
	if got := visible(s.t, s.dir); !slices.Equal(got, want) {
		s.t.Fatalf("%s (attempt %d): a reader sees %d records, want the %d committed", what, s.attempt, len(got), len(want))
	}
}

// A reader of the output directory sees exactly what was committed, at any
// point of random interleavings of writes, checkpoints (pre-commits),
// completions, commits and crashes, across attempts at changing
// parallelism; and once the last attempt committed a part in every
// subtask, no in-progress file is left.
func TestSinkExactlyOnceAcrossCrashes(t *testing.T) {
	rng := testseed.Rand(t, 31)
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "out")
		s := &sinkSim{t: t, rng: rng, dir: dir, cps: map[int64][][]simPending{}, contents: map[string][]string{}, committed: map[string]bool{}}
		s.sink = partSink(dir)
		s.sink.RollSize = []int64{0, 1, 60, 300}[rng.IntN(4)]
		s.roll = s.sink.RollSize
		if s.roll == 0 {
			s.roll = file.DefaultRollSize
		}
		s.start(1 + rng.IntN(4))
		for range 3 + rng.IntN(5) { // attempts that crash
			for range rng.IntN(120) {
				switch k := rng.IntN(20); {
				case k < 12:
					s.write(rng.IntN(len(s.subs)))
				case k < 14:
					s.checkpoint()
				case k < 16:
					s.complete()
				case k < 19:
					s.notify(rng.IntN(len(s.subs)))
				default:
					s.check(fmt.Sprintf("round %d", round))
				}
			}
			s.check(fmt.Sprintf("round %d, before a crash", round))
			s.crash(1 + rng.IntN(4))
		}
		// The last attempt: every subtask writes, and a final checkpoint
		// completes and is committed everywhere.
		for i := range s.subs {
			s.write(i)
		}
		for range rng.IntN(50) {
			s.write(rng.IntN(len(s.subs)))
		}
		s.checkpoint()
		s.complete()
		for i, sub := range s.subs {
			s.notify(i)
			if err := sub.w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s.check(fmt.Sprintf("round %d, at the end", round))
		if left := hidden(t, dir); len(left) > 0 {
			t.Fatalf("round %d: in-progress files left at the end: %v", round, left)
		}
	}
}

// Without checkpoints everything is committed at the end of input; the
// runtime calls PrepareCommit and Commit then.
func TestSinkWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		w, _ := partSink(dir).CreateWriter(sinkCtx(i, 3))
		c, _ := partSink(dir).CreateCommitter(sinkCtx(i, 3))
		w.Write(fmt.Sprint("line ", i), 0)
		w.Flush(true)
		cs, err := w.PrepareCommit()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(cs); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if got := visible(t, dir); !slices.Equal(got, []string{"line 0", "line 1", "line 2"}) {
		t.Fatalf("got %q", got)
	}
	if left := hidden(t, dir); len(left) > 0 {
		t.Fatalf("left %v", left)
	}
}
