package file_test

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// writeInput writes a directory of files with random lines (some empty,
// some longer than the read buffer, \n or \r\n endings, sometimes no final
// line ending) and returns every line as LineSource must emit it.
func writeInput(t *testing.T, rng *rand.Rand, long bool) (string, []file.Line) {
	t.Helper()
	dir := t.TempDir()
	var want []file.Line
	for f := range 1 + rng.IntN(4) {
		var lines []string
		var text string
		if long && rng.IntN(4) == 0 {
			lines, text = randomText(rng, 1+rng.IntN(3000)) // with lines of 300 KiB
		} else {
			lines, text = shortText(rng, rng.IntN(3000))
		}
		path := filepath.Join(dir, fmt.Sprintf("in-%d.txt", f))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			want = append(want, file.Line{Path: path, Number: int64(i + 1), Text: l})
		}
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("no\n"), 0o644)
	return dir, want
}

// shortText is randomText without long lines.
func shortText(rng *rand.Rand, n int) ([]string, string) {
	var b strings.Builder
	lines := make([]string, n)
	for i := range lines {
		if rng.IntN(30) > 0 {
			lines[i] = fmt.Sprintf("l%d-%s", i, strings.Repeat("x", rng.IntN(80)))
		}
		b.WriteString(lines[i])
		if i < n-1 || lines[i] == "" || rng.IntN(2) == 0 {
			if rng.IntN(4) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
	}
	return lines, b.String()
}

func compareLines(a, b file.Line) int {
	return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Number, b.Number), strings.Compare(a.Text, b.Text))
}

// Readers snapshotted at random points and restored into new readers, at
// the same or another parallelism, read every line exactly once: whatever
// the split size, with lines across split boundaries and longer than a
// split, and the line source numbers every line right.
func TestRestoresReadEveryLineOnce(t *testing.T) {
	rng := testseed.Rand(t, 21)
	for round := range 24 {
		// Lines of 300 KiB only with splits larger than a few KiB: a line is
		// read again by every split it spans, to find where the next begins.
		splitSize := []int64{0, 97, 4096, 50_000}[rng.IntN(4)]
		dir, want := writeInput(t, rng, round%2 == 1 || splitSize == 0 || splitSize > 10_000)
		o := sourcetest.Options{
			Parallelism: 1 + rng.IntN(4),
			Failures:    rng.IntN(6),
			Steps:       1 + rng.IntN(60),
			Restore:     func(rng *rand.Rand) int { return 1 + rng.IntN(5) },
		}
		if round%2 == 0 {
			got, err := sourcetest.RunWithFailures(rng, file.TextSource{Path: dir, SplitSize: splitSize}, o)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			texts := make([]string, len(want))
			for i, l := range want {
				texts[i] = l.Text
			}
			slices.Sort(texts)
			slices.Sort(got)
			if !slices.Equal(got, texts) {
				t.Fatalf("round %d (split size %d, %d failures): %d lines, want %d", round, splitSize, o.Failures, len(got), len(texts))
			}
			continue
		}
		got, err := sourcetest.RunWithFailures(rng, file.LineSource{Path: dir}, o)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		slices.SortFunc(got, compareLines)
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("round %d (line source, %d failures): line %d is %s, want %s", round, o.Failures, i, showLine(got[i]), showLine(want[i]))
				}
			}
			t.Fatalf("round %d (line source, %d failures): %d lines, want %d", round, o.Failures, len(got), len(want))
		}
	}
}

// A restored split goes on at its offset, a line boundary, without
// skipping a partial line first, and the line source numbers on from
// where it was.
func TestResumeAtOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(path, []byte("one\ntwo\n\nfour\r\nfive"), 0o644)
	for _, tc := range []struct {
		split file.Split
		want  []file.Line
	}{
		// Resumed right after "one\n": "two" is read, not skipped.
		{file.Split{Path: path, End: 19, Started: true, Offset: 4, Lines: 1}, []file.Line{{path, 2, "two"}, {path, 3, ""}, {path, 4, "four"}, {path, 5, "five"}}},
		// A split from byte 8 not started skips nothing either ("\n" at 7 ends line 2).
		{file.Split{Path: path, Start: 8, End: 19}, []file.Line{{path, 1, ""}, {path, 2, "four"}, {path, 3, "five"}}},
		// A split from byte 5, not started, skips the rest of "two".
		{file.Split{Path: path, Start: 5, End: 9}, []file.Line{{path, 1, ""}}},
		// Resumed in it at 9 ("four"): the line starts before End.
		{file.Split{Path: path, Start: 5, End: 10, Started: true, Offset: 9, Lines: 1}, []file.Line{{path, 2, "four"}}},
		// At its end: nothing.
		{file.Split{Path: path, Start: 5, End: 9, Started: true, Offset: 9, Lines: 1}, nil},
	} {
		r, err := file.LineSource{Path: path}.CreateReader(benchReaderCtx{})
		if err != nil {
			t.Fatal(err)
		}
		r.AddSplits([]file.Split{tc.split})
		r.NoMoreSplits()
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		out := &listOutput[file.Line]{}
		for {
			st, _, _, err := r.PollNext(out)
			if err != nil {
				t.Fatal(err)
			}
			if st == source.EndOfInput {
				break
			}
		}
		r.Close()
		if !slices.Equal(out.items, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.split, out.items, tc.want)
		}
	}
}

func showLine(l file.Line) string { return fmt.Sprintf("%s:%d %.40q", l.Path, l.Number, l.Text) }

type listOutput[T any] struct{ items []T }

func (o *listOutput[T]) Collect(v T)                       { o.items = append(o.items, v) }
func (o *listOutput[T]) CollectWithTimestamp(v T, _ int64) { o.items = append(o.items, v) }
func (o *listOutput[T]) CollectBatch(vs []T)               { o.items = append(o.items, vs...) }
func (o *listOutput[T]) ShouldYield() bool                 { return false }

// A stream (standard input here) cannot be resumed: a restore that finds
// it partly read fails and says why. One not started yet, whether still
// with the enumerator or queued at a reader, is read whole after a restore.
func TestStreamIsNotReplayable(t *testing.T) {
	text := "a\nb\nc\nd\n"
	pr, pw := io.Pipe()
	defer pw.Close()
	go fmt.Fprint(pw, text) // and the writer stays
	src := file.LineSource{Path: "-", Stdin: pr}
	job, err := sourcetest.Start(src, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Deliver()
	pollUntil(t, job, "a line", func(source.Status) bool { return len(job.Reader(0).Out) > 0 })
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	for _, p := range []int{1, 2} {
		_, err = sourcetest.Restore(src, cp, p, nil)
		if err == nil || !strings.Contains(err.Error(), "cannot resume reading standard input") || !strings.Contains(err.Error(), "not replayable") {
			t.Fatalf("restore at parallelism %d: %v", p, err)
		}
	}

	// Not handed out yet: the enumerator keeps it.
	src.Stdin = strings.NewReader(text)
	job, _ = sourcetest.Start(src, 1, nil)
	cp, err = job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	got := restoreAndRun(t, src, cp, 2)
	if len(got) != 4 || got[3] != (file.Line{Path: "stdin", Number: 4, Text: "d"}) {
		t.Fatalf("restored before it was handed out: %v", got)
	}

	// Handed out, not opened: the reader returns it as it got it.
	src.Stdin = strings.NewReader(text)
	job, _ = sourcetest.Start(src, 1, nil)
	job.Reader(0).Poll() // asks for a split
	job.Deliver()        // and gets it
	cp, err = job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	if len(cp.Splits[0]) != 1 {
		t.Fatalf("the reader's checkpoint holds %d splits, want the stream", len(cp.Splits[0]))
	}
	if got := restoreAndRun(t, src, cp, 1); len(got) != 4 {
		t.Fatalf("restored before it was opened: %v", got)
	}
}

func restoreAndRun(t *testing.T, src file.LineSource, cp *sourcetest.Checkpoint, p int) []file.Line {
	t.Helper()
	job, err := sourcetest.Restore(src, cp, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Run(rand.New(rand.NewPCG(1, 1)), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return job.All()
}

// Splits survive their codec, and so does the enumerator's state through a
// restore; corrupt or truncated encodings are errors.
func TestSplitCodec(t *testing.T) {
	c := file.TextSource{}.SplitCodec()
	for _, s := range []file.Split{
		{Path: "a/b.txt", Start: 0, End: 10},
		{Path: "-", Stream: true},
		{Path: "/dev/stdin", Stream: true, Started: true, Lines: 17},
		{Path: "x", Start: 1 << 40, End: 1<<40 + 5, Started: true, Offset: 1<<40 + 3, Lines: 1 << 33},
		{Path: "", Start: 3, End: 3},
	} {
		enc := c.AppendEncode([]byte("x"), s)
		got, n, err := c.Decode(enc[1:])
		if err != nil || n != len(enc)-1 || got != s {
			t.Fatalf("%+v: decoded %+v, %d, %v", s, got, n, err)
		}
		for k := range len(enc) - 1 {
			if _, _, err := c.Decode(enc[1 : 1+k]); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("%+v cut to %d bytes: %v", s, k, err)
			}
		}
	}
	for _, bad := range []file.Split{
		{Path: "x", Start: 5, End: 4},
		{Path: "x", Start: 5, End: 10, Started: true, Offset: 11},
		{Path: "x", Start: 5, End: 10, Started: true, Offset: 4},
	} {
		if _, _, err := c.Decode(c.AppendEncode(nil, bad)); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%+v decoded: %v", bad, err)
		}
	}
	enc := c.AppendEncode(nil, file.Split{Path: "x"})
	enc[0] = 7
	if _, _, err := c.Decode(enc); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := (file.TextSource{}).CreateEnumerator(nil, []byte{1, 5}); err == nil {
		t.Error("a truncated enumerator state was restored")
	}
}

func (o *listOutput[T]) ForSplit(string) source.SplitOutput[T] { return listOutputSplit[T]{o} }
func (o *listOutput[T]) ReleaseSplit(string)                   {}

type listOutputSplit[T any] struct{ *listOutput[T] }

func (listOutputSplit[T]) EmitWatermark(int64) {}
func (listOutputSplit[T]) MarkIdle()           {}
