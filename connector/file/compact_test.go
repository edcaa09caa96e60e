package file_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/sink"
)

// TestSinkCompactExactlyOnceAcrossCrashes is TestSinkExactlyOnceAcrossCrashes
// with compaction on, under random policies, and crashes injected between
// the steps of compactions as well: after the first source is copied into
// the compaction file (a partial file left), after the compacted part is
// renamed into place (its sources not deleted yet), and after the first
// source is deleted. A reader never sees a record twice nor one no
// completed checkpoint covers; at the end, exactly the final checkpoint's
// records, and no hidden file but the markers.
func TestSinkCompactExactlyOnceAcrossCrashes(t *testing.T) {
	rng := testseed.Rand(t, 37)
	rounds := 16
	if testing.Short() {
		rounds = 6
	}
	fired := map[string]int{}
	steps := []string{"copied", "renamed", "deleted"}
	unexercised := func() bool {
		return slices.ContainsFunc(steps, func(s string) bool { return fired[s] == 0 })
	}
	t.Cleanup(file.SetCompactFault(nil))
	// Rounds go on past rounds, up to four times as many, until a crash
	// was injected at every step: a few seeds inject none at "renamed" in
	// the first rounds.
	for round := 0; round < rounds || (!testing.Short() && unexercised() && round < 4*rounds); round++ {
		simulateSink(t, rng, round, func(s *sinkSim) string {
			p := &file.CompactPolicy{
				SmallerThan:    []int64{-1, 0, 1, 40, 150, 400}[rng.IntN(6)],
				MaxCheckpoints: []int{-1, 0, 1, 2, 3}[rng.IntN(5)],
			}
			if p.SmallerThan < 0 && p.MaxCheckpoints < 0 {
				p.MaxCheckpoints = 2
			}
			s.sink.Compact = p
			odds := 2 + rng.IntN(6)
			file.SetCompactFault(func(step string) error {
				if rng.IntN(odds) == 0 {
					fired[step]++
					return fmt.Errorf("%w at %s", errInjected, step)
				}
				return nil
			})
			return fmt.Sprintf(", compact %+v, faults 1 in %d", *p, odds)
		})
	}
	t.Logf("crashes injected: %v", fired)
	for _, step := range steps {
		if fired[step] == 0 && !testing.Short() {
			t.Errorf("no crash injected at %q: the test does not exercise it", step)
		}
	}
}

// compactSink is a sink whose every record is its own part (RollSize 1),
// compacted under p.
func compactSink(dir string, p file.CompactPolicy) file.Sink[string] {
	s := partSink(dir)
	s.RollSize = 1
	s.Logger = slog.New(slog.DiscardHandler)
	s.Compact = &p
	return s
}

// parts lists the committed part files of dir.
func parts(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// The policy step by step: parts smaller than SmallerThan stay hidden,
// recorded as held at every checkpoint, until their total reaches
// SmallerThan; then they are concatenated into one part, visible once the
// checkpoint completes, and the sources are gone. Large parts pass
// through. MaxCheckpoints compacts a group that stays small, and a group
// of one part is committed as it is, without a copy.
func TestSinkCompactPolicy(t *testing.T) {
	dir := t.TempDir()
	s := compactSink(dir, file.CompactPolicy{SmallerThan: 12, MaxCheckpoints: 3})
	ctx := cpCtx(0, 1, "L", 0)
	w, _ := s.CreateWriter(ctx)
	c, _ := s.CreateCommitter(ctx)
	step := func(id int64, lines ...string) []file.Committable {
		t.Helper()
		writeAll(t, w, lines...)
		cs := prepare(t, w, id)
		if err := c.Commit(cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	kinds := func(cs []file.Committable) string {
		var k []string
		for _, cm := range cs {
			switch {
			case cm.Held:
				k = append(k, fmt.Sprintf("held(%d)", len(cm.Sources)))
			case len(cm.Sources) > 0:
				k = append(k, fmt.Sprintf("compacted(%d)", len(cm.Sources)))
			default:
				k = append(k, "closed")
			}
		}
		return strings.Join(k, " ")
	}
	// "aaa\n" and "bbb\n": 8 bytes, below 12: held.
	cs := step(1, "aaa", "bbb")
	if kinds(cs) != "held(2)" {
		t.Fatalf("checkpoint 1: %s %+v", kinds(cs), cs)
	}
	target := cs[0].Final
	if got := visible(t, dir); len(got) != 0 {
		t.Fatalf("held parts are visible: %q", got)
	}
	// A large part passes through; the group is recorded again.
	if cs := step(2, "a-large-record"); kinds(cs) != "closed held(2)" || cs[1].Final != target {
		t.Fatalf("checkpoint 2: %s", kinds(cs))
	}
	if got := visible(t, dir); !slices.Equal(got, []string{"a-large-record"}) {
		t.Fatalf("after checkpoint 2: %q", got)
	}
	// "ccc\n" brings the group to 12 bytes: compacted.
	cs = step(3, "ccc")
	if kinds(cs) != "compacted(3)" || cs[0].Final != target {
		t.Fatalf("checkpoint 3: %s", kinds(cs))
	}
	if got := visible(t, dir); !slices.Equal(got, []string{"a-large-record", "aaa", "bbb", "ccc"}) {
		t.Fatalf("after checkpoint 3: %q", got)
	}
	if n := len(parts(t, dir)); n != 2 {
		t.Fatalf("%d parts, want the large one and the compacted one: %v", n, parts(t, dir))
	}
	b, _ := os.ReadFile(filepath.Join(dir, cs[0].Final))
	if string(b) != "aaa\nbbb\nccc\n" {
		t.Fatalf("compacted part holds %q", b)
	}
	if h := hidden(t, dir); !slices.Equal(h, []string{".weir-commit-0"}) {
		t.Fatalf("hidden files left: %v", h)
	}
	// A group that stays small is compacted at its third checkpoint.
	for id := int64(4); id <= 6; id++ {
		cs := step(id, fmt.Sprint(id))
		if want := map[int64]string{4: "held(1)", 5: "held(2)", 6: "compacted(3)"}[id]; kinds(cs) != want {
			t.Fatalf("checkpoint %d: %s, want %s", id, kinds(cs), want)
		}
	}
	if got := visible(t, dir); len(got) != 7 {
		t.Fatalf("after checkpoint 6: %q", got)
	}
	// One small part at the end of input: committed as it is.
	writeAll(t, w, "z")
	w.Flush(true)
	if cs := step(7); kinds(cs) != "closed" {
		t.Fatalf("end of input: %s", kinds(cs))
	}
	if got := visible(t, dir); len(got) != 8 || len(parts(t, dir)) != 4 {
		t.Fatalf("at the end: %q in %v", got, parts(t, dir))
	}
	if err := (file.Sink[string]{Dir: dir, Compact: &file.CompactPolicy{SmallerThan: -1, MaxCheckpoints: -1}}).Validate(1); err == nil || !strings.Contains(err.Error(), "MaxCheckpoints") {
		t.Fatalf("an unbounded policy: %v", err)
	}
}

// Without checkpoints, the small parts are compacted at the end of input,
// into parts of at least SmallerThan bytes (but the last).
func TestSinkCompactWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	s := compactSink(dir, file.CompactPolicy{SmallerThan: 100})
	w, _ := s.CreateWriter(sinkCtx(0, 1))
	c, _ := s.CreateCommitter(sinkCtx(0, 1))
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("line-%03d", i)) // 9 bytes a part
	}
	writeAll(t, w, want...)
	w.Flush(true)
	cs, err := w.PrepareCommit()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(cs); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, dir); !slices.Equal(got, want) {
		t.Fatalf("got %d lines %q", len(got), got)
	}
	// 900 bytes in groups of 12 parts (108 bytes): 9 files.
	if n := len(parts(t, dir)); n != 9 {
		t.Fatalf("%d part files, want 9: %v", n, parts(t, dir))
	}
	if h := hidden(t, dir); len(h) != 0 {
		t.Fatalf("hidden files left: %v", h)
	}
}

// When the task ends after a completed checkpoint (a stop with a
// savepoint), the held parts it recorded are committed as they are, so the
// stopped job's output is whole; a restore of that checkpoint commits
// nothing twice. Held parts a compaction of a later checkpoint took are
// left to it.
func TestSinkCompactCloseCommitsHeldParts(t *testing.T) {
	for _, later := range []bool{false, true} {
		dir := t.TempDir()
		s := compactSink(dir, file.CompactPolicy{SmallerThan: 100, MaxCheckpoints: 2})
		ctx := cpCtx(0, 1, "L", 0)
		w, _ := s.CreateWriter(ctx)
		c, _ := s.CreateCommitter(ctx)
		writeAll(t, w, "a", "b")
		cs1 := prepare(t, w, 1)
		if err := c.Commit(cs1); err != nil {
			t.Fatal(err)
		}
		var cs2 []file.Committable
		if later { // checkpoint 2 compacts the group; it does not complete
			writeAll(t, w, "c")
			cs2 = prepare(t, w, 2)
			if len(cs2) != 1 || len(cs2[0].Sources) != 3 {
				t.Fatalf("checkpoint 2: %+v", cs2)
			}
		}
		w.Close()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "b"}
		if later {
			want = nil
		}
		if got := visible(t, dir); !slices.Equal(got, want) {
			t.Fatalf("compaction pre-committed after %t: after Close %q, want %q", later, got, want)
		}
		// The restore of checkpoint 1 commits each record once.
		rctx := cpCtx(0, 1, "L", 1)
		if _, err := s.CreateWriter(rctx); err != nil {
			t.Fatal(err)
		}
		c2, _ := s.CreateCommitter(rctx)
		if err := c2.Commit(cs1); err != nil {
			t.Fatal(err)
		}
		if got := visible(t, dir); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("after the restore: %q", got)
		}
	}
}

// An open part that a completed checkpoint recorded, then rolled at that
// same length and taken into a compaction by a later checkpoint that
// completed too, is not committed under its own name when the task ends
// before the committer heard of the later checkpoint: the restore of that
// checkpoint commits it in the compaction, so committing it at Close as
// well would show its records twice. Found by TestSinkCompactExactlyOnceAcrossCrashes
// with WEIR_SEED=12431388072273418203 (round 3). When the committer did
// hear of it, the compaction is committed and nothing else.
func TestSinkCompactCloseLeavesAPartALaterCompactionTook(t *testing.T) {
	for _, told := range []bool{false, true} {
		dir := t.TempDir()
		now := time.Unix(1e6, 0)
		s := partSink(dir)
		s.RollSize, s.RollInterval, s.InactivityInterval = 1<<20, time.Second, -1
		s.Logger = slog.New(slog.DiscardHandler)
		s.Compact = &file.CompactPolicy{SmallerThan: -1, MaxCheckpoints: 1}
		file.SetClock(&s, func() time.Time { return now })
		ctx := cpCtx(0, 1, "L", 0)
		w, _ := s.CreateWriter(ctx)
		c, _ := s.CreateCommitter(ctx)
		writeAll(t, w, "a", "b")
		cs1 := prepare(t, w, 1) // the part is open, recorded with its length
		if len(cs1) != 1 || !cs1[0].Open {
			t.Fatalf("checkpoint 1: %+v", cs1)
		}
		if err := c.Commit(cs1); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Second) // the part rolls on time, at that length
		w.Flush(false)
		writeAll(t, w, "c")
		now = now.Add(2 * time.Second)
		cs2 := prepare(t, w, 2) // both parts compacted: checkpoint 2 completes
		if len(cs2) != 1 || len(cs2[0].Sources) != 2 || cs2[0].Sources[0] != cs1[0].InProgress {
			t.Fatalf("checkpoint 2: %+v", cs2)
		}
		if told {
			if err := c.Commit(cs2); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "b", "c"}
		if !told {
			want = nil // left to the restore
		}
		if got := visible(t, dir); !slices.Equal(got, want) {
			t.Fatalf("told of checkpoint 2 %t: after Close %q, want %q", told, got, want)
		}
		rctx := cpCtx(0, 1, "L", 2)
		if _, err := s.CreateWriter(rctx); err != nil {
			t.Fatal(err)
		}
		c2, _ := s.CreateCommitter(rctx)
		if err := c2.Commit(append(slices.Clone(cs1), cs2...)); err != nil {
			t.Fatal(err)
		}
		if got := visible(t, dir); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("told of checkpoint 2 %t: after the restore %q", told, got)
		}
	}
}

// A compaction crashed at each of its steps, then restored from the
// checkpoint before it (the crash came while pre-committing) or the one
// that pre-committed it (it completed), at the same or another parallelism
// (the held parts and the compaction then restored by different
// subtasks), gives each record once: a partial compaction file is ignored
// and deleted, held parts a restored compaction takes are not committed
// on their own, a renamed one is not renamed twice, and sources left after
// the rename are not committed again.
func TestSinkCompactRestoreAfterCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"copied", "completed", "renamed", "deleted"} {
		from := int64(2) // checkpoint 2 completes iff the crash comes after it pre-committed
		if step == "copied" {
			from = 1
		}
		for _, p := range []int{1, 2} {
			what := fmt.Sprintf("crash after %s, restore from %d at parallelism %d", step, from, p)
			dir := t.TempDir()
			s := compactSink(dir, file.CompactPolicy{SmallerThan: 8})
			ctx := cpCtx(0, 1, "L", 0)
			w, _ := s.CreateWriter(ctx)
			c, _ := s.CreateCommitter(ctx)
			writeAll(t, w, "a", "b")
			cs1 := prepare(t, w, 1)
			c.Commit(cs1)
			writeAll(t, w, "c", "d") // 8 bytes with a and b: compacted
			restore := file.SetCompactFault(func(s string) error {
				if s == step {
					return errInjected
				}
				return nil
			})
			cs2, err := func() ([]file.Committable, error) {
				w.(sink.BarrierAware).Barrier(2)
				w.Flush(false)
				return w.PrepareCommit()
			}()
			switch step {
			case "completed": // checkpoint 2 completed, the process died before its commit
				if err == nil {
					err = errInjected
				}
			case "renamed", "deleted":
				if err != nil {
					t.Fatal(err)
				}
				err = c.Commit(cs2) // checkpoint 2 completed
			}
			restore()
			if err == nil {
				t.Fatalf("%s: the injected crash did not happen", what)
			}
			state := map[int64][]file.Committable{1: cs1, 2: append(slices.Clone(cs1), cs2...)}[from]
			// The restored state goes to p subtasks, cut as the runtime
			// cuts list state; then each writes and ends its input.
			var ws []partWriter
			var cs []sink.Committer[file.Committable]
			for sub := range p {
				rctx := cpCtx(sub, p, "L", from)
				rw, err := s.CreateWriter(rctx)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				rc, _ := s.CreateCommitter(rctx)
				ws, cs = append(ws, rw), append(cs, rc)
			}
			for sub, rc := range cs {
				lo, hi := sub*len(state)/p, (sub+1)*len(state)/p
				if err := rc.Commit(state[lo:hi]); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			for sub, rw := range ws {
				writeAll(t, rw, fmt.Sprint("new", sub))
				rw.Flush(true)
				if err := cs[sub].Commit(prepare(t, rw, 3)); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			want := []string{"a", "b"}
			if from == 2 {
				want = append(want, "c", "d")
			}
			for sub := range p {
				want = append(want, fmt.Sprint("new", sub))
			}
			slices.Sort(want)
			if got := visible(t, dir); !slices.Equal(got, want) {
				t.Fatalf("%s: %q, want %q", what, got, want)
			}
			if h := hidden(t, dir); len(h) != p {
				t.Fatalf("%s: hidden files left: %v", what, h)
			}
		}
	}
}
