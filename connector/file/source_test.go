package file_test

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

// readAll runs the source at parallelism p to the end of its input and
// returns all lines.
func readAll(t *testing.T, src file.TextSource, p int) []string {
	t.Helper()
	var all []string
	for _, part := range readSubtasks[string](t, src, p) {
		all = append(all, part...)
	}
	return all
}

// readSubtasks runs the source at parallelism p to the end of its input,
// waiting as a task would when a reader has nothing yet, and returns what
// each subtask read.
func readSubtasks[T any](t *testing.T, src source.Source[T, file.Split], p int) [][]T {
	t.Helper()
	job, err := sourcetest.Start(src, p, clock.System{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Run(rand.New(rand.NewPCG(uint64(p), 1)), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	out := make([][]T, p)
	for i := range p {
		out[i] = job.Reader(i).Out
	}
	return out
}

// openOne starts the source at parallelism 1 and returns its reader once
// it holds its first split (pollUntil polls it).
func openOne[T any](t *testing.T, src source.Source[T, file.Split]) *sourcetest.Job[T, file.Split] {
	t.Helper()
	job, err := sourcetest.Start(src, 1, clock.System{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	if err := job.Deliver(); err != nil {
		t.Fatal(err)
	}
	return job
}

// pollUntil polls the job's reader 0 until done says so, delivering events
// and waiting as a task would; it fails after 10s.
func pollUntil[T any](t *testing.T, job *sourcetest.Job[T, file.Split], what string, done func(source.Status) bool) {
	t.Helper()
	r := job.Reader(0)
	deadline := time.After(10 * time.Second)
	for {
		st, wait, _, err := r.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if done(st) {
			return
		}
		if job.Pending() {
			if err := job.Deliver(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if st == source.NothingAvailable {
			if wait == nil {
				t.Fatal("NothingAvailable without a channel to wait on")
			}
			select {
			case <-wait:
			case <-deadline:
				t.Fatalf("no %s after 10s; %d records", what, len(r.Out))
			}
		}
	}
}

// Every line is read exactly once whatever the split size and parallelism,
// including lines that cross split boundaries and lines longer than a split.
func TestSplitsCoverEveryLineOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	dir := t.TempDir()
	var want []string
	for f := range 3 {
		var b strings.Builder
		for i := range rng.IntN(1500) {
			line := fmt.Sprintf("f%d-l%d-%s", f, i, strings.Repeat("x", rng.IntN(3)*rng.IntN(400)))
			if rng.IntN(20) == 0 {
				line = ""
			}
			want = append(want, line)
			b.WriteString(line)
			if rng.IntN(4) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		if rng.IntN(2) == 0 { // no final newline
			want = append(want, fmt.Sprintf("f%d-tail", f))
			b.WriteString(fmt.Sprintf("f%d-tail", f))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("not me\n"), 0o644)
	slices.Sort(want)
	for _, splitSize := range []int64{97, 4096, 1 << 20, 0} {
		for _, p := range []int{1, 2, 3, 4} {
			got := readAll(t, file.TextSource{Path: dir, SplitSize: splitSize}, p)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("split size %d, parallelism %d: %d lines, want %d", splitSize, p, len(got), len(want))
			}
		}
	}
}

// randomText returns n lines (some empty, some longer than every buffer)
// and a text holding them, with \n or \r\n endings and sometimes no final
// line ending.
func randomText(rng *rand.Rand, n int) ([]string, string) {
	var b strings.Builder
	lines := make([]string, n)
	for i := range lines {
		switch k := rng.IntN(500); {
		case k < 10:
			lines[i] = ""
		case k == 10:
			lines[i] = fmt.Sprintf("long-%d-%s", i, strings.Repeat("y", 300<<10))
		default:
			lines[i] = fmt.Sprintf("line-%d-%s", i, strings.Repeat("x", rng.IntN(60)))
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

// Path "-" reads standard input (here injected) as one split, by one
// subtask only, in order, to its end; more than the stream holds at once.
func TestStdinIsReadAsOneStream(t *testing.T) {
	rng := testseed.Rand(t, 5)
	want, text := randomText(rng, 20_000+rng.IntN(5000))
	for _, p := range []int{1, 2, 3} {
		src := file.TextSource{Path: "-", Stdin: strings.NewReader(text)}
		splits, err := src.Splits(p)
		if err != nil || len(splits) != 1 || !splits[0].Stream {
			t.Fatalf("parallelism %d: splits %v, %v; want one streamed split", p, splits, err)
		}
		readers := 0
		for i, got := range readSubtasks[string](t, src, p) {
			if len(got) == 0 {
				continue
			}
			readers++
			if !slices.Equal(got, want) {
				t.Fatalf("parallelism %d: subtask %d read %d lines, want %d, in order", p, i, len(got), len(want))
			}
		}
		if readers != 1 {
			t.Fatalf("parallelism %d: %d subtasks read standard input", p, readers)
		}
	}
}

// A reader that blocks (a pipe) is read as lines arrive: the source says
// NothingAvailable with a channel that is signalled when lines come, and the
// end of input only when the writer closes.
func TestStdinStreamsAsLinesArrive(t *testing.T) {
	pr, pw := io.Pipe()
	job := openOne[file.Line](t, file.LineSource{Path: "-", Stdin: pr})
	rec := job.Reader(0)
	// The reader asks for its split, gets it, and opens the stream.
	pollUntil(t, job, "split", func(st source.Status) bool { return !job.Pending() && st == source.NothingAvailable })
	if st, _, _, _ := rec.Poll(); st != source.NothingAvailable || len(rec.Out) != 0 {
		t.Fatalf("before any input: status %v with %d lines, want NothingAvailable", st, len(rec.Out))
	}
	go fmt.Fprint(pw, "first\nsecond\n")
	pollUntil(t, job, "first two lines", func(source.Status) bool { return len(rec.Out) == 2 })
	if st, _, _, _ := rec.Poll(); st != source.NothingAvailable {
		t.Fatalf("with the writer still open: status %v, want NothingAvailable", st)
	}
	go func() {
		fmt.Fprint(pw, "third")
		pw.Close()
	}()
	pollUntil(t, job, "end of input", func(st source.Status) bool { return st == source.EndOfInput })
	want := []file.Line{{"stdin", 1, "first"}, {"stdin", 2, "second"}, {"stdin", 3, "third"}}
	if !slices.Equal(rec.Out, want) {
		t.Fatalf("got %v, want %v", rec.Out, want)
	}
}

// The line source numbers lines exactly within each file and names the file
// each came from; each file is read whole by one subtask, at parallelism 1
// in name order.
func TestLineSourceNumbersLinesPerFile(t *testing.T) {
	rng := testseed.Rand(t, 6)
	dir := t.TempDir()
	var want []file.Line
	for _, name := range []string{"b.jsonl", "a.jsonl", "c"} {
		lines, text := randomText(rng, 1+rng.IntN(3000))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			want = append(want, file.Line{Path: path, Number: int64(i + 1), Text: l})
		}
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("no\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "_SUCCESS"), []byte("no\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "x"), []byte("no\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644)
	byPath := func(a, b file.Line) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return int(a.Number - b.Number)
	}
	slices.SortFunc(want, byPath)

	got := readSubtasks[file.Line](t, file.LineSource{Path: dir}, 1)[0]
	if !slices.EqualFunc(got, want, func(a, b file.Line) bool { return a == b }) {
		t.Fatalf("parallelism 1: %d lines, want %d in file name order", len(got), len(want))
	}
	for _, p := range []int{2, 3} {
		var all []file.Line
		for i, part := range readSubtasks[file.Line](t, file.LineSource{Path: dir}, p) {
			// Each file this subtask read, it read whole and in order.
			for j := 1; j < len(part); j++ {
				if part[j].Path == part[j-1].Path && part[j].Number != part[j-1].Number+1 {
					t.Fatalf("parallelism %d, subtask %d: line %v follows %v", p, i, part[j], part[j-1])
				}
			}
			all = append(all, part...)
		}
		slices.SortFunc(all, byPath)
		if !slices.Equal(all, want) {
			t.Fatalf("parallelism %d: %d lines, want %d", p, len(all), len(want))
		}
	}

	// One file, and standard input.
	path := filepath.Join(dir, "a.jsonl")
	got = readSubtasks[file.Line](t, file.LineSource{Path: path}, 1)[0]
	if len(got) == 0 || got[0].Path != path || got[0].Number != 1 {
		t.Fatalf("file %s: first line %v", path, got[:min(len(got), 1)])
	}
	got = readSubtasks[file.Line](t, file.LineSource{Path: "-", Stdin: strings.NewReader("x\n\ny")}, 1)[0]
	if want := []file.Line{{"stdin", 1, "x"}, {"stdin", 2, ""}, {"stdin", 3, "y"}}; !slices.Equal(got, want) {
		t.Fatalf("stdin: got %v, want %v", got, want)
	}
}

// A character device is one streamed split, read by one subtask.
func TestDeviceIsOneStreamedSplit(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	splits, err := file.TextSource{Path: os.DevNull}.Splits(4)
	if err != nil || len(splits) != 1 || splits[0] != (file.Split{Path: os.DevNull, Stream: true}) {
		t.Fatalf("splits of %s: %v, %v; want one streamed split", os.DevNull, splits, err)
	}
	for i, got := range readSubtasks[string](t, file.TextSource{Path: os.DevNull}, 2) {
		if len(got) != 0 {
			t.Fatalf("subtask %d read %q", i, got)
		}
	}
}

func TestMissingInputIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.txt")
	_, err := sourcetest.Start[string](file.TextSource{Path: path}, 1, nil)
	if err == nil || err.Error() != "file source: input "+path+" does not exist" {
		t.Fatalf("got %v", err)
	}
}

// A line longer than MaxLineBytes (a binary file read as text, say) fails
// with an error naming the file, instead of taking unbounded memory; from a
// file and from a stream.
func TestLineTooLong(t *testing.T) {
	long := strings.Repeat("x", file.MaxLineBytes+10)
	path := filepath.Join(t.TempDir(), "blob.bin")
	if err := os.WriteFile(path, []byte("ok\n"+long+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []file.TextSource{{Path: path}, {Path: "-", Stdin: strings.NewReader("ok\n" + long + "\n")}} {
		job := openOne[string](t, src)
		r := job.Reader(0)
		var err error
		deadline := time.Now().Add(20 * time.Second)
		for err == nil && time.Now().Before(deadline) {
			var st source.Status
			st, _, _, err = r.Poll()
			if st == source.EndOfInput {
				break
			}
			job.Deliver()
		}
		_, _, _, again := r.Poll()
		job.Close()
		if again == nil {
			t.Errorf("%s: the reader went on after its error", src.Path)
		}
		if !errors.Is(err, file.ErrLineTooLong) || !strings.Contains(err.Error(), src.Path) && src.Path != "-" {
			t.Errorf("%s: got %v after %d lines, want ErrLineTooLong naming the file", src.Path, err, len(r.Out))
		}
		if len(r.Out) != 1 {
			t.Errorf("%s: %d lines before the error, want 1 (%.20q)", src.Path, len(r.Out), r.Out)
		}
	}
}

// The readers emit per split (source.Output.ForSplit), so a source with a
// watermark strategy keeps a watermark per split: each file split's lines
// go through its own output (also a last line without a line ending), and
// the split is released once read. The reference counts each file's lines.
func TestReadersEmitPerSplit(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a": "1\n2\n3\n", "b": "x\ny", "c": "\n\n\n\nlast"}
	want := map[string]int{}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		want[p+"@0"] = len(strings.Split(text, "\n"))
		if strings.HasSuffix(text, "\n") {
			want[p+"@0"]--
		}
	}
	for _, src := range []any{file.TextSource{Path: dir}, file.LineSource{Path: dir}} {
		var perSplit map[string]int
		var direct int
		var released, misuse []string
		switch s := src.(type) {
		case file.TextSource:
			job, err := sourcetest.Start(s, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := job.Run(rand.New(rand.NewPCG(1, 1)), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			r := job.Reader(0)
			perSplit, direct, released, misuse = r.PerSplit, r.Direct, r.Released, r.SplitErrors
			job.Close()
		case file.LineSource:
			job, err := sourcetest.Start(s, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := job.Run(rand.New(rand.NewPCG(1, 1)), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			r := job.Reader(0)
			perSplit, direct, released, misuse = r.PerSplit, r.Direct, r.Released, r.SplitErrors
			job.Close()
		}
		if !maps.Equal(perSplit, want) || direct != 0 || len(misuse) > 0 {
			t.Errorf("%T: lines per split %v (direct %d, misuses %q), want %v", src, perSplit, direct, misuse, want)
		}
		if slices.Sort(released); len(released) != len(want) || len(slices.Compact(slices.Clone(released))) != len(want) {
			t.Errorf("%T: released %q, want each of the %d splits once", src, released, len(want))
		}
	}
}

// Watermark alignment pauses splits (source.SplitPauser): while the split
// being read is paused the reader emits nothing and waits on a channel
// that a resume signals; then it reads on, every line once.
func TestReaderPausesSplit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := sourcetest.Start(file.TextSource{Path: path}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	r := job.Reader(0)
	for r.N == 0 {
		if _, _, _, err := r.Poll(); err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
	}
	p := r.R.(source.SplitPauser)
	p.PauseOrResumeSplits([]string{path + "@0"}, nil)
	before := r.N
	st, wake, _, err := r.Poll()
	if err != nil || st != source.NothingAvailable || wake == nil || r.N != before {
		t.Fatalf("split paused: poll = %v, wake %v, %v, %d new lines; want NothingAvailable with a wake channel and none", st, wake != nil, err, r.N-before)
	}
	select {
	case <-wake: // a signal left from the split assignment
	default:
	}
	p.PauseOrResumeSplits(nil, []string{path + "@0"})
	select {
	case <-wake:
	default:
		t.Fatal("a resume did not signal the wake channel")
	}
	if err := job.Run(rand.New(rand.NewPCG(1, 1)), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := job.All(); len(got) != 2000 || got[0] != "0" || got[1999] != "1999" {
		t.Fatalf("%d lines after pausing and resuming, want 2000 in order", len(got))
	}
}

// A reader that holds a split queued behind the one it reads (after a
// restore at a lower parallelism) does not wait while only the split being
// read is paused: the queued split's output holds the source's watermark
// (and so the alignment group's) where it is, and the reader reads one split
// at a time, so waiting for a resume would wait forever. It reads on, the
// paused split running ahead as Flink's unaligned source splits do; with
// every split it holds paused it waits.
func TestReaderReadsOnPastPausedSplitWithOneQueued(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%04d\n", i) // 5 bytes a line
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := file.TextSource{Path: path, SplitSize: 5000}
	job, err := sourcetest.Start(src, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each reader starts its split and reads some of it.
	for i := range 2 {
		r := job.Reader(i)
		r.YieldEvery = 10
		for r.N == 0 {
			if _, _, _, err := r.Poll(); err != nil {
				t.Fatal(err)
			}
			if err := job.Deliver(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	job, err = sourcetest.Restore(src, cp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	r := job.Reader(0)
	r.YieldEvery = 10
	ids := []string{path + "@0", path + "@5000"}
	// The first poll opens the first split (and makes both outputs).
	if _, _, _, err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	if len(r.PerSplit) != 2 {
		t.Fatalf("outputs %v after the restore at parallelism 1, want both splits'", r.PerSplit)
	}
	cur := ""
	for id, n := range r.PerSplit {
		if n > 0 {
			cur = id
		}
	}
	p := r.R.(source.SplitPauser)
	p.PauseOrResumeSplits([]string{cur}, nil)
	before := r.N
	st, _, _, err := r.Poll()
	if err != nil || r.N == before {
		t.Fatalf("the split being read paused, another queued: poll = %v, %v, %d new lines; want the reader to read on", st, err, r.N-before)
	}
	// Every split paused: the reader waits.
	p.PauseOrResumeSplits(ids, nil)
	before = r.N
	if st, wake, _, err := r.Poll(); err != nil || st != source.NothingAvailable || wake == nil || r.N != before {
		t.Fatalf("every split paused: poll = %v, wake %v, %v, %d new lines; want NothingAvailable with a wake channel and none", st, wake != nil, err, r.N-before)
	}
	p.PauseOrResumeSplits(nil, ids)
	if err := job.Run(rand.New(rand.NewPCG(1, 1)), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
