package file_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/failure"
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

func cpCtx(subtask, p int, lineage string, restored int64) *fakeSinkCtx {
	return &fakeSinkCtx{subtask: subtask, p: p, checkpointing: true, lineage: lineage, restored: restored}
}

type partWriter = sink.CommittingWriter[string, file.Committable]

// prepare takes checkpoint id in w as the runtime does: Barrier, Flush,
// PrepareCommit.
func prepare(t *testing.T, w partWriter, id int64) []file.Committable {
	t.Helper()
	if err := w.(sink.BarrierAware).Barrier(id); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PrepareCommit()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Checkpoint != id {
			t.Fatalf("checkpoint %d: committable %+v", id, c)
		}
	}
	return cs
}

func writeAll(t *testing.T, w partWriter, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if err := w.Write(l, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// The two phases step by step: nothing is visible before its commit, a
// commit is idempotent, a part stays open across checkpoints (the
// checkpoint records its length), rolls above RollSize and is committed
// with the checkpoint after it rolled, the end of input commits
// everything, and a part gone under both names is an error naming it.
func TestSinkTwoPhases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := partSink(dir)
	s.RollSize = 10
	s.Suffix = ".txt"
	w, err := s.CreateWriter(cpCtx(1, 2, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCommitter(cpCtx(1, 2, "", 0))
	if cs := prepare(t, w, 1); len(cs) != 0 {
		t.Fatalf("nothing written: PrepareCommit = %v", cs)
	}
	if got := listTree(t, dir); len(got) != 1 {
		t.Fatalf("nothing written, yet the directory holds %v", got)
	}
	writeAll(t, w, "a", "b", "0123456789", "c") // "a\nb\n0123456789\n" is 15 bytes: rolled
	if got := visible(t, dir); len(got) != 0 {
		t.Fatalf("visible before the barrier: %q", got)
	}
	cs := prepare(t, w, 2)
	abs, _ := filepath.Abs(dir)
	if len(cs) != 2 || cs[0].Open || !cs[1].Open || cs[1].Length != 2 || cs[0].Dir != abs || cs[1].Dir != abs {
		t.Fatalf("PrepareCommit = %+v; want the rolled part, then the open one of 2 bytes", cs)
	}
	for i, cm := range cs {
		if !strings.HasPrefix(cm.InProgress, ".") || !strings.HasPrefix(cm.Final, "part-") || !strings.HasSuffix(cm.Final, fmt.Sprintf("-1-%d.txt", i)) {
			t.Fatalf("committable %+v", cm)
		}
	}
	if got := visible(t, dir); len(got) != 0 {
		t.Fatalf("visible before the commit: %q", got)
	}
	writeAll(t, w, "d") // the next interval, not committed
	for range 2 {       // a second commit changes nothing
		if err := c.Commit(cs); err != nil {
			t.Fatal(err)
		}
		if got, want := visible(t, dir), []string{"0123456789", "a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("after the commit: %q, want %q (the open part stays open)", got, want)
		}
	}
	if got := readFile(t, filepath.Join(dir, cs[0].Final)); got != "a\nb\n0123456789\n" {
		t.Fatalf("first part holds %q", got)
	}
	// The open part across a checkpoint: the same part, longer.
	cs3 := prepare(t, w, 3)
	if len(cs3) != 1 || cs3[0].InProgress != cs[1].InProgress || cs3[0].Length != 4 {
		t.Fatalf("checkpoint 3: %+v, want the open part at 4 bytes", cs3)
	}
	c.Commit(cs3)
	// The end of input closes it.
	w.Flush(true)
	w.(sink.BarrierAware).Barrier(4)
	cs5, err := w.PrepareCommit()
	if err != nil || len(cs5) != 1 || cs5[0].Open || cs5[0].Final != cs[1].Final {
		t.Fatalf("at the end of input: %+v, %v", cs5, err)
	}
	if cs6 := prepare(t, w, 5); len(cs6) != 0 {
		t.Fatalf("an empty interval: %v", cs6)
	}
	w.Close()
	// Pending, not committed, survives Close (a checkpoint holds it).
	if got := hidden(t, dir); !slices.Contains(got, cs5[0].InProgress) {
		t.Fatalf("after Close: hidden %v, want the pending part", got)
	}
	if err := c.Commit(cs5); err != nil {
		t.Fatal(err)
	}
	if got, want := visible(t, dir), []string{"0123456789", "a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("at the end: %q, want %q", got, want)
	}
	os.Rename(filepath.Join(dir, cs5[0].Final), filepath.Join(t.TempDir(), "gone"))
	err = c.Commit(cs5)
	if err == nil || !strings.Contains(err.Error(), "cannot commit "+filepath.Join(abs, cs5[0].Final)) || !strings.Contains(err.Error(), cs5[0].InProgress) || !failure.IsPermanent(err) {
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

// A writer closed after a failure deletes the parts no checkpoint recorded
// and cuts the others to the length the last checkpoint recorded.
func TestSinkCloseDeletesWhatNoCheckpointHolds(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	s.RollSize = 8
	w, _ := s.CreateWriter(cpCtx(0, 1, "", 0))
	writeAll(t, w, "pending", "open") // rolled at 8 bytes, then open
	cs := prepare(t, w, 1)            // the rolled one, the open one at 5 bytes
	writeAll(t, w, "more")            // rolls the recorded open part at 10 bytes
	writeAll(t, w, "unrecorded")      // rolled, never recorded
	writeAll(t, w, "x")               // open, never recorded
	if got := hidden(t, dir); len(got) != 4 || len(cs) != 2 {
		t.Fatalf("hidden %v, committables %+v; want 4 parts, 2 committables", got, cs)
	}
	w.Close()
	want := []string{cs[0].InProgress, cs[1].InProgress}
	slices.Sort(want)
	if got := hidden(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after Close: %v, want %v", got, want)
	}
	if got := readFile(t, filepath.Join(dir, cs[1].InProgress)); got != "open\n" {
		t.Fatalf("the recorded part holds %q after Close, want what checkpoint 1 recorded", got)
	}
}

// The time rules of the rolling policy, on an injected clock: a part rolls
// once older than RollInterval, or after InactivityInterval without a
// record, checked at flushes and barriers; the rolled part is committed
// with the next checkpoint.
func TestSinkRollsOnTime(t *testing.T) {
	now := time.Unix(1000, 0)
	s := partSink(t.TempDir())
	s.RollInterval, s.InactivityInterval = 10*time.Second, 3*time.Second
	file.SetClock(&s, func() time.Time { return now })
	w, _ := s.CreateWriter(cpCtx(0, 1, "", 0))
	tick := func(d time.Duration, line string) {
		now = now.Add(d)
		if line != "" {
			writeAll(t, w, line)
		}
		if err := w.Flush(false); err != nil {
			t.Fatal(err)
		}
	}
	open := func(cs []file.Committable) (n int) {
		for _, c := range cs {
			if !c.Open {
				n++
			}
		}
		return n
	}
	// Active all the time: opened at the first record, rolls 10 s later.
	for range 10 {
		tick(time.Second, "x")
	}
	if cs := prepare(t, w, 1); open(cs) != 0 {
		t.Fatalf("after 9 s: %+v, want the part still open", cs)
	}
	tick(time.Second, "")
	if cs := prepare(t, w, 2); len(cs) != 1 || cs[0].Open {
		t.Fatalf("after 10 s: %+v, want the part rolled", cs)
	}
	// Inactive: rolls 3 s after its last record was seen.
	tick(time.Second, "y")
	tick(2*time.Second, "")
	if cs := prepare(t, w, 3); len(cs) != 1 || !cs[0].Open {
		t.Fatalf("2 s inactive: %+v, want the part open", cs)
	}
	tick(time.Second, "")
	if cs := prepare(t, w, 4); len(cs) != 1 || cs[0].Open {
		t.Fatalf("3 s inactive: %+v, want the part rolled", cs)
	}
	// Negative: never on time.
	s.RollInterval, s.InactivityInterval = -1, -1
	w, _ = s.CreateWriter(cpCtx(0, 1, "", 0))
	tick(time.Hour, "z")
	tick(time.Hour, "")
	if cs := prepare(t, w, 5); len(cs) != 1 || !cs[0].Open {
		t.Fatalf("no time limits: %+v, want the part open", cs)
	}
}

// A restore cuts an open part to the length its checkpoint recorded and
// commits it, whatever was written after the barrier; an older record of
// the same part (another subtask may hold the restored checkpoint's) is
// left alone.
func TestSinkRestoreCutsOpenPart(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	w, _ := s.CreateWriter(cpCtx(0, 1, "L", 0))
	writeAll(t, w, "a", "b")
	cs1 := prepare(t, w, 1)
	writeAll(t, w, "c")
	cs2 := prepare(t, w, 2)
	writeAll(t, w, "after the barrier")
	w.Flush(false)
	if len(cs1) != 1 || len(cs2) != 1 {
		t.Fatalf("%+v %+v", cs1, cs2)
	}
	// The process dies: no Close. Restore checkpoint 2, whose pending
	// committables are split between two subtasks, the newer one last.
	for i, share := range [][]file.Committable{cs1, cs2} {
		c, _ := s.CreateCommitter(cpCtx(i, 2, "L", 2))
		if err := c.Commit(share); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := visible(t, dir), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("after the restore: %q, want %q", got, want)
	}
	// Restoring again changes nothing.
	c, _ := s.CreateCommitter(cpCtx(0, 1, "L", 2))
	if err := c.Commit(append(cs1, cs2...)); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, dir); len(got) != 3 {
		t.Fatalf("after a second restore: %q", got)
	}
}

// When the task ends after a completed checkpoint (a stop with a
// savepoint), the open part is committed as the checkpoint recorded it, so
// the stopped job's output is whole; records after the barrier are not.
func TestSinkCloseCommitsCompletedOpenPart(t *testing.T) {
	for _, after := range []bool{false, true} {
		dir := t.TempDir()
		s := partSink(dir)
		ctx := cpCtx(0, 1, "L", 0)
		w, _ := s.CreateWriter(ctx)
		c, _ := s.CreateCommitter(ctx)
		writeAll(t, w, "a", "b")
		cs := prepare(t, w, 1)
		if after {
			writeAll(t, w, "after")
			w.Flush(false)
		}
		if err := c.Commit(cs); err != nil {
			t.Fatal(err)
		}
		if got := visible(t, dir); len(got) != 0 {
			t.Fatalf("the open part is visible: %q", got)
		}
		w.Close()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := visible(t, dir), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("records after the barrier %t: after Close %q, want %q", after, got, want)
		}
		// The savepoint's restore: committed before; and the floor is 1.
		if _, err := s.CreateWriter(cpCtx(0, 1, "L", 1)); err != nil {
			t.Fatal(err)
		}
		c2, _ := s.CreateCommitter(cpCtx(0, 1, "L", 1))
		if err := c2.Commit(cs); err != nil {
			t.Fatal(err)
		}
		if got := visible(t, dir); len(got) != 2 {
			t.Fatalf("after the restore: %q", got)
		}
		if _, err := s.CreateWriter(cpCtx(0, 1, "L", 0)); err == nil || !strings.Contains(err.Error(), "checkpoint 1") {
			t.Fatalf("a restart below what Close committed: %v", err)
		}
	}
}

// commitRun runs one subtask of a job of lineage to the end of its input
// with checkpoint id, committing it.
func commitRun(t *testing.T, s file.Sink[string], ctx *fakeSinkCtx, id int64, lines ...string) {
	t.Helper()
	w, err := s.CreateWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCommitter(ctx)
	writeAll(t, w, lines...)
	w.Flush(true)
	if err := c.Commit(prepare(t, w, id)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	c.Close()
}

func wantPermanent(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !failure.IsPermanent(err) {
		t.Errorf("%s: %v is not permanent", what, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v\ndoes not say %q", what, err, p)
		}
	}
}

// Two lineages never write one directory: a fresh start (a new lineage)
// into the output of another that committed something is refused, naming
// the directory, the other lineage, its last checkpoint and what to do; a
// lineage that committed nothing (killed before its first commit) is taken
// over; a committer whose marker another lineage took stops.
func TestSinkRefusesAnotherLineage(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	commitRun(t, s, cpCtx(0, 1, "lineage-A", 0), 7, "a")
	_, err := s.CreateWriter(cpCtx(0, 2, "lineage-B", 0))
	wantPermanent(t, "a second lineage", err, dir, "lineage-A", "checkpoint 7", "--from latest", "empty output directory")
	_, err = s.CreateWriter(cpCtx(1, 2, "lineage-B", 3))
	wantPermanent(t, "a second lineage, restored", err, "lineage-A")
	if got := visible(t, dir); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("output %q", got)
	}

	// Claimed, nothing committed: taken over, and the first lineage's
	// committer stops at its next commit.
	dir2 := t.TempDir()
	s2 := partSink(dir2)
	wa, err := s2.CreateWriter(cpCtx(0, 1, "lineage-A", 0))
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := s2.CreateCommitter(cpCtx(0, 1, "lineage-A", 0))
	writeAll(t, wa, "from A")
	wa.Flush(true)
	csA := prepare(t, wa, 1)
	commitRun(t, s2, cpCtx(0, 1, "lineage-B", 0), 1, "from B")
	wantPermanent(t, "the first lineage commits after the second took the directory", ca.Commit(csA), dir2, "lineage-B", "taken")
	if got := visible(t, dir2); !slices.Equal(got, []string{"from B"}) {
		t.Fatalf("output %q", got)
	}
}

// A restore below what the lineage committed is refused, naming the
// newer checkpoint; from it or above is fine (and deletes what a cut-short
// marker write left); without checkpoints no marker is kept.
func TestSinkRefusesRestoreBelowCommitted(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	commitRun(t, s, cpCtx(1, 2, "L", 3), 5, "a")
	_, err := s.CreateWriter(cpCtx(0, 2, "L", 3))
	wantPermanent(t, "restore below", err, dir, "resuming from checkpoint 3", "checkpoint 5", "newest snapshot")
	// A marker write cut short by a crash left its temporary file.
	os.WriteFile(filepath.Join(dir, ".weir-commit-0.tmp-0123"), []byte("{"), 0o644)
	for _, r := range []int64{5, 9} {
		if _, err := s.CreateWriter(cpCtx(0, 3, "L", r)); err != nil {
			t.Fatalf("restore from %d: %v", r, err)
		}
	}
	markers := 0
	for _, h := range hidden(t, dir) {
		if strings.HasPrefix(h, ".weir-commit-") {
			markers++
		}
	}
	if markers != 2 || len(hidden(t, dir)) != 2 {
		t.Fatalf("hidden files %v, want the markers of subtasks 0 and 1", hidden(t, dir))
	}
	dir2 := t.TempDir()
	commitRun(t, partSink(dir2), sinkCtx(0, 1), 0, "x")
	if h := hidden(t, dir2); len(h) != 0 {
		t.Fatalf("without checkpoints: hidden %v", h)
	}
}

// Committed parts without markers (an older Weir's, or a run without
// checkpoints): a fresh start is refused, a resume continues with a
// warning.
func TestSinkUnmarkedOutput(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	commitRun(t, s, sinkCtx(0, 1), 0, "old")
	_, err := s.CreateWriter(cpCtx(0, 1, "L", 0))
	wantPermanent(t, "a fresh start into unmarked parts", err, dir, "1 committed part files", "empty output directory")
	var log strings.Builder
	s.Logger = slog.New(slog.NewTextHandler(&log, nil))
	if _, err := s.CreateWriter(cpCtx(0, 1, "L", 4)); err != nil {
		t.Fatalf("a resume into unmarked parts: %v", err)
	}
	if !strings.Contains(log.String(), "without commit markers") {
		t.Fatalf("no warning: %q", log.String())
	}
}

func TestSinkCommittableCodec(t *testing.T) {
	c := partSink("x").CommittableCodec()
	for _, want := range []file.Committable{
		{InProgress: ".part-0123456789abcdef-3-7.inprogress", Final: "part-0123456789abcdef-3-7"},
		{InProgress: ".p.inprogress", Final: "p", Dir: "/out/dir", Checkpoint: 1 << 40, Open: true, Length: 12345},
		{InProgress: ".q.compact-7", Final: "q", Dir: "/out/dir", Checkpoint: 7, Held: true, Sources: []string{".p.inprogress"}},
		{InProgress: ".q.compact-9", Final: "q", Dir: "/out/dir", Checkpoint: 9, Sources: []string{".p.inprogress", ".r.inprogress"}},
	} {
		enc := c.AppendEncode([]byte("z"), want)
		if v := enc[1]; (v == 3) != (want.Held || len(want.Sources) > 0) {
			t.Fatalf("%+v encoded as version %d: version 3 is for compaction only", want, v)
		}
		got, n, err := c.Decode(enc[1:])
		if err != nil || n != len(enc)-1 || !reflect.DeepEqual(got, want) {
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
	// Version 1, as checkpoints of Weir before commit markers hold it.
	v1 := []byte{1, 3, '.', 'p', 'x', 1, 'p'}
	got, n, err := c.Decode(v1)
	if err != nil || n != len(v1) || !reflect.DeepEqual(got, file.Committable{InProgress: ".px", Final: "p"}) {
		t.Fatalf("version 1: %+v, %d, %v", got, n, err)
	}
}

// A restore of a committable of version 1 (no directory, no checkpoint)
// commits it in the sink's directory.
func TestSinkRestoresVersion1Committable(t *testing.T) {
	dir := t.TempDir()
	s := partSink(dir)
	w, _ := s.CreateWriter(sinkCtx(0, 1))
	writeAll(t, w, "old")
	w.Flush(true)
	cs, _ := w.PrepareCommit()
	v1 := []byte{1}
	for _, n := range []string{cs[0].InProgress, cs[0].Final} {
		v1 = append(v1, byte(len(n)))
		v1 = append(v1, n...)
	}
	cm, _, err := s.CommittableCodec().Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCommitter(cpCtx(0, 1, "L", 9))
	if err := c.Commit([]file.Committable{cm}); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, dir); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("output %q", got)
	}
}

// sinkSim runs a Sink the way the runtime runs a two-phase-commit sink,
// across attempts: a writer and a committer per subtask; at a checkpoint
// every subtask gets the barrier, flushes, pre-commits and keeps its
// pending committables in the checkpoint; when a checkpoint completes,
// each subtask is notified in its own time and commits what checkpoints up
// to it pre-committed; a crash drops every writer and committer (closed, as
// when a task is canceled or stopped, or not, as when the process dies),
// and the next attempt, at any parallelism and sometimes into another
// output directory, gets the pending committables of the last completed
// checkpoint redistributed as operator list state is, and each subtask
// commits its share before its first record. A checkpoint needs every
// subtask to have initialized (committed what it restored). Time, for the
// rolling policy, is a clock the simulation advances.
//
// The model is independent of how parts are cut: every record is unique,
// and a checkpoint covers the records its restored checkpoint covered plus
// those the attempt wrote before its barrier. A reader must see no record
// twice and none a completed checkpoint does not cover; after the final
// checkpoint, exactly the records it covers.
type sinkSim struct {
	t        *testing.T
	rng      *rand.Rand
	sink     file.Sink[string]
	now      time.Time
	dirs     []string // output directories, the current one last
	attempt  int
	subs     []*simSub
	id       int64
	cps      map[int64]*simCheckpoint
	latest   int64                // the latest completed checkpoint (0: none)
	restored [][]file.Committable // per subtask of the current attempt, to commit at init
	covered  []string             // what the restored checkpoint covers
	written  []string             // what this attempt wrote
	records  int
	died     bool // an injected fault stopped the attempt where it was
}

// errInjected is the failure that SetCompactFault injects: the process
// dies there.
var errInjected = errors.New("injected crash")

type simCheckpoint struct {
	pending [][]simPending // per subtask
	covered []string
}

type simSub struct {
	w       partWriter
	c       sink.Committer[file.Committable]
	init    bool
	pending []simPending
	notify  int64 // commit up to this checkpoint when notified (0: nothing to do)
}

type simPending struct {
	cp int64
	c  file.Committable
}

func (s *sinkSim) start(p int) {
	s.subs = nil
	for i := range p {
		ctx := cpCtx(i, p, "lineage", s.latest)
		ctx.attempt = s.attempt
		w, err := s.sink.CreateWriter(ctx)
		if err != nil {
			s.t.Fatalf("attempt %d: %v", s.attempt, err)
		}
		c, err := s.sink.CreateCommitter(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		s.subs = append(s.subs, &simSub{w: w, c: c})
	}
	s.restored = make([][]file.Committable, p)
	if s.latest == 0 {
		return
	}
	var old [][][]byte
	codec := s.sink.CommittableCodec()
	for _, pend := range s.cps[s.latest].pending {
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

// initialize commits what subtask i restored, as the runtime does before
// the subtask's first record.
func (s *sinkSim) initialize(i int) {
	sub := s.subs[i]
	if sub.init || s.died {
		return
	}
	sub.init = true
	if len(s.restored[i]) > 0 {
		s.commit(sub, s.restored[i])
	}
}

func (s *sinkSim) commit(sub *simSub, cs []file.Committable) {
	if s.died {
		return
	}
	if err := sub.c.Commit(cs); errors.Is(err, errInjected) {
		s.died = true
	} else if err != nil {
		s.t.Fatalf("attempt %d: %v", s.attempt, err)
	}
}

func (s *sinkSim) write(i int) {
	if s.initialize(i); s.died {
		return
	}
	line := fmt.Sprintf("a%d-s%d-r%d-%s", s.attempt, i, s.records, strings.Repeat("x", s.rng.IntN(30)))
	s.records++
	if err := s.subs[i].w.Write(line, 0); err != nil {
		s.t.Fatal(err)
	}
	s.written = append(s.written, line)
}

func (s *sinkSim) flush(i int) {
	s.now = s.now.Add(time.Duration(s.rng.IntN(150)) * time.Millisecond)
	if err := s.subs[i].w.Flush(false); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sinkSim) checkpoint() {
	for i := range s.subs {
		s.initialize(i)
	}
	if s.died {
		return
	}
	s.id++
	cp := &simCheckpoint{covered: append(slices.Clone(s.covered), s.written...)}
	for _, sub := range s.subs {
		if err := sub.w.(sink.BarrierAware).Barrier(s.id); err != nil {
			s.t.Fatal(err)
		}
		if err := sub.w.Flush(false); err != nil {
			s.t.Fatal(err)
		}
		cs, err := sub.w.PrepareCommit()
		if errors.Is(err, errInjected) {
			s.died = true
			return // the checkpoint never completes
		}
		if err != nil {
			s.t.Fatal(err)
		}
		for _, c := range cs {
			sub.pending = append(sub.pending, simPending{s.id, c})
		}
		cp.pending = append(cp.pending, slices.Clone(sub.pending))
	}
	s.cps[s.id] = cp
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

// crash ends the attempt; the next one starts at parallelism p, into a new
// output directory if move.
func (s *sinkSim) crash(p int, move bool) {
	clean := s.rng.IntN(2) == 0 && !s.died // a cancellation or stop; else the process died
	s.died = false
	for _, sub := range s.subs {
		if clean {
			sub.w.Close()
			if err := sub.c.Close(); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	// A checkpoint that did not complete is gone.
	for id := range s.cps {
		if id > s.latest {
			delete(s.cps, id)
		}
	}
	s.covered, s.written = nil, nil
	if s.latest > 0 {
		s.covered = s.cps[s.latest].covered
		if move {
			s.dirs = append(s.dirs, filepath.Join(s.t.TempDir(), "out"))
			s.sink.Dir = s.dirs[len(s.dirs)-1]
		}
	}
	s.attempt++
	s.start(p)
}

// check reads every output directory as a reader would.
func (s *sinkSim) check(what string, final bool) {
	var got []string
	for _, d := range s.dirs {
		if _, err := os.Stat(d); err == nil {
			got = append(got, visible(s.t, d)...)
		}
	}
	slices.Sort(got)
	var want []string
	if s.latest > 0 {
		want = slices.Sorted(slices.Values(s.cps[s.latest].covered))
	}
	if final {
		if !slices.Equal(got, want) {
			missing, extra := diffSorted(want, got)
			s.t.Fatalf("%s: a reader sees %d records, want the %d of the final checkpoint; missing %q, extra %q", what, len(got), len(want), missing, extra)
		}
		return
	}
	for i, l := range got {
		if i > 0 && got[i-1] == l {
			s.t.Fatalf("%s (attempt %d): %q twice", what, s.attempt, l)
		}
		if _, ok := slices.BinarySearch(want, l); !ok {
			s.t.Fatalf("%s (attempt %d): %q visible, which no completed checkpoint covers", what, s.attempt, l)
		}
	}
}

// diffSorted returns what only a has and what only b has, of two sorted lists.
func diffSorted(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

// A reader of the output directories sees no record twice and none that
// no completed checkpoint covers, at any point of random interleavings of
// writes, flushes, checkpoints (pre-commits), completions, commits and
// crashes, across attempts at changing parallelism, resumed sometimes into
// a new output directory, with parts rolling on size and time; once the
// final checkpoint is committed, exactly what it covers; and no
// in-progress file is left in the last directory.
func TestSinkExactlyOnceAcrossCrashes(t *testing.T) {
	rng := testseed.Rand(t, 31)
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		simulateSink(t, rng, round, nil)
	}
}

// simulateSink runs one round of TestSinkExactlyOnceAcrossCrashes, with
// compaction if compact is not nil: it picks the policy and sets the
// sink's Compact.
func simulateSink(t *testing.T, rng *rand.Rand, round int, compact func(*sinkSim) string) {
	{
		dir := filepath.Join(t.TempDir(), "out")
		s := &sinkSim{t: t, rng: rng, dirs: []string{dir}, cps: map[int64]*simCheckpoint{}, now: time.Unix(1e6, 0)}
		s.sink = partSink(dir)
		s.sink.RollSize = []int64{0, 1, 60, 300}[rng.IntN(4)]
		s.sink.RollInterval = []time.Duration{-1, 0, 200 * time.Millisecond, time.Second}[rng.IntN(4)]
		s.sink.InactivityInterval = []time.Duration{-1, 0, 300 * time.Millisecond}[rng.IntN(3)]
		s.sink.Logger = slog.New(slog.DiscardHandler)
		file.SetClock(&s.sink, func() time.Time { return s.now })
		what := fmt.Sprintf("round %d (roll size %d, interval %v, inactivity %v)", round, s.sink.RollSize, s.sink.RollInterval, s.sink.InactivityInterval)
		if compact != nil {
			what += compact(s)
		}
		s.start(1 + rng.IntN(4))
		for range 3 + rng.IntN(5) { // attempts that crash
			for range rng.IntN(150) {
				if s.died {
					break
				}
				switch k := rng.IntN(24); {
				case k < 12:
					s.write(rng.IntN(len(s.subs)))
				case k < 15:
					s.flush(rng.IntN(len(s.subs)))
				case k < 17:
					s.checkpoint()
				case k < 19:
					s.complete()
				case k < 23:
					s.notify(rng.IntN(len(s.subs)))
				default:
					s.check(what, false)
				}
			}
			s.check(what+", before a crash", false)
			s.crash(1+rng.IntN(4), rng.IntN(4) == 0)
		}
		// The last attempt: every subtask writes, the input ends, and a
		// final checkpoint completes and is committed everywhere.
		defer file.SetCompactFault(nil)()
		for i := range s.subs {
			s.write(i)
		}
		for range rng.IntN(50) {
			s.write(rng.IntN(len(s.subs)))
		}
		for _, sub := range s.subs {
			sub.w.Flush(true)
		}
		s.checkpoint()
		s.complete()
		for i, sub := range s.subs {
			s.notify(i)
			if err := sub.w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := sub.c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s.check(what+", at the end", true)
		last := s.dirs[len(s.dirs)-1]
		for _, h := range hidden(t, last) {
			if !strings.HasPrefix(h, ".weir-commit-") {
				t.Fatalf("%s: in-progress files left at the end in %s: %v", what, last, hidden(t, last))
			}
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

// A job resumed into another output directory finishes the restored
// pending commits in the old one (a rolled part renamed, the open part
// copied as its checkpoint recorded it, leaving its in-progress file to
// whoever may still write it), says so in the log, and writes on in the new
// one, which it claims for its lineage; the union of both holds every
// record once. If the old directory is gone, the pending commits are
// discarded, said in the log. A new directory that holds the parts (a copy
// of the output) commits them itself.
func TestSinkResumeIntoAnotherDirectory(t *testing.T) {
	for _, mode := range []string{"kept", "gone", "copied"} {
		gone := mode == "gone"
		old, moved := filepath.Join(t.TempDir(), "old"), filepath.Join(t.TempDir(), "new")
		s := partSink(old)
		s.RollSize = 7
		w, _ := s.CreateWriter(cpCtx(0, 1, "L", 0))
		writeAll(t, w, "rolled", "open") // "rolled\n" is 7 bytes: rolled
		cs := prepare(t, w, 1)
		writeAll(t, w, "after")
		w.Flush(false)
		if len(cs) != 2 || cs[0].Open || !cs[1].Open {
			t.Fatalf("%+v", cs)
		}
		// The process dies with checkpoint 1 complete, its commit not done.
		switch mode {
		case "gone":
			os.RemoveAll(old)
		case "copied": // the output copied (or moved) along with the savepoint
			if err := os.CopyFS(moved, os.DirFS(old)); err != nil {
				t.Fatal(err)
			}
		}
		var log strings.Builder
		s.Dir, s.Logger = moved, slog.New(slog.NewTextHandler(&log, nil))
		ctx := cpCtx(0, 1, "L", 1)
		w2, err := s.CreateWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c2, _ := s.CreateCommitter(ctx)
		if err := c2.Commit(cs); err != nil {
			t.Fatal(err)
		}
		writeAll(t, w2, "new")
		w2.Flush(true)
		if err := c2.Commit(prepare(t, w2, 2)); err != nil {
			t.Fatal(err)
		}
		if gone {
			if !strings.Contains(log.String(), "gone") || !strings.Contains(log.String(), old) {
				t.Fatalf("old directory gone: log %q", log.String())
			}
			if got := visible(t, moved); !slices.Equal(got, []string{"new"}) {
				t.Fatalf("old directory gone: new output %q", got)
			}
			continue
		}
		if mode == "copied" {
			if got, want := visible(t, moved), []string{"new", "open", "rolled"}; !slices.Equal(got, want) || log.Len() != 0 {
				t.Fatalf("into a copy: %q, want %q; log %q", got, want, log.String())
			}
			if got := visible(t, old); len(got) != 0 {
				t.Fatalf("into a copy, the original changed: %q", got)
			}
			continue
		}
		if !strings.Contains(log.String(), "finished the restored pending commits") || !strings.Contains(log.String(), old) {
			t.Fatalf("log %q", log.String())
		}
		if got, want := visible(t, old), []string{"open", "rolled"}; !slices.Equal(got, want) {
			t.Fatalf("old directory: %q, want %q", got, want)
		}
		if got, want := visible(t, moved), []string{"new"}; !slices.Equal(got, want) {
			t.Fatalf("new directory: %q, want %q", got, want)
		}
		if !slices.Contains(hidden(t, moved), ".weir-commit-0") {
			t.Fatalf("the new directory is not claimed: %v", hidden(t, moved))
		}
		// A fresh lineage cannot write into either now.
		for _, d := range []string{old, moved} {
			s.Dir = d
			if _, err := s.CreateWriter(cpCtx(0, 1, "M", 0)); err == nil {
				t.Fatalf("another lineage may write into %s", d)
			}
		}
	}
}
