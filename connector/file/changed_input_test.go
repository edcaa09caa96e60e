package file_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/weirhq/weir/source"
)

// numberedInput writes a directory of files a.txt and b.txt of n lines
// each ("a-1" ...) and returns it with the files' lines as LineSource
// emits them.
func numberedInput(t *testing.T, n int) (string, []file.Line) {
	t.Helper()
	dir := t.TempDir()
	var want []file.Line
	for _, name := range []string{"a", "b"} {
		path := filepath.Join(dir, name+".txt")
		var b strings.Builder
		for i := 1; i <= n; i++ {
			text := fmt.Sprintf("%s-%d", name, i)
			fmt.Fprintln(&b, text)
			want = append(want, file.Line{Path: path, Number: int64(i), Text: text})
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

// checkpointMidway checkpoints src at parallelism 1 once its reader read
// `read` lines (0: before it asked for a split), and returns the
// checkpoint with the lines read.
func checkpointMidway(t *testing.T, src file.LineSource, read int) (*sourcetest.Checkpoint, []file.Line) {
	t.Helper()
	job, err := sourcetest.Start(src, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if read > 0 {
		job.Reader(0).YieldEvery = read
		pollUntil(t, job, "line", func(source.Status) bool { return len(job.Reader(0).Out) >= read })
	}
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	return cp, slices.Clone(job.Reader(0).Out)
}

// runRestored restores src from cp at parallelism p and reads to the end.
func runRestored(t *testing.T, src file.LineSource, cp *sourcetest.Checkpoint, p int) []file.Line {
	t.Helper()
	job, err := sourcetest.Restore(src, cp, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Run(rand.New(rand.NewPCG(1, 2)), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return job.All()
}

func abs(t *testing.T, path string) string {
	t.Helper()
	a, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A restore into another input (another file, another directory) is a
// permanent error naming both inputs and saying to resume with the same
// --input, never a job whose restored splits go on reading the old input
// (or read nothing, when it was read to its end) and that ends as if it
// had read the new one. Checkpoints of Weir before the enumerator recorded
// its input are refused too when their splits name files outside it.
func TestRestoreIntoAnotherInputRefused(t *testing.T) {
	dirA, _ := numberedInput(t, 50)
	dirB, _ := numberedInput(t, 50)
	fileA, fileB := filepath.Join(dirA, "a.txt"), filepath.Join(dirB, "a.txt")
	for _, tc := range []struct {
		name     string
		from, to string
		read     int
	}{
		{"directory, partly read", dirA, dirB, 7},
		{"directory, not started", dirA, dirB, 0},
		{"directory, read to its end", dirA, dirB, 100},
		{"file, partly read", fileA, fileB, 7},
		{"file read to its end", fileA, fileB, 50},
		{"file to a directory", fileA, dirB, 3},
	} {
		cp, _ := checkpointMidway(t, file.LineSource{Path: tc.from}, tc.read)
		_, err := sourcetest.Restore(file.LineSource{Path: tc.to}, cp, 2, nil)
		wantPermanent(t, tc.name, err, "read input "+abs(t, tc.from), "this run's input is "+abs(t, tc.to), "same --input", "without --from")
		// The same input restores.
		if got := runRestored(t, file.LineSource{Path: tc.from}, cp, 2); len(got) == 0 && tc.read < 50 {
			t.Errorf("%s: the same input restored read nothing", tc.name)
		}
	}

	// TextSource, with many splits per file, the same way.
	job, err := sourcetest.Start(file.TextSource{Path: dirA, SplitSize: 40}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := job.Checkpoint(1)
	job.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = sourcetest.Restore(file.TextSource{Path: dirB, SplitSize: 40}, cp, 3, nil)
	wantPermanent(t, "text source", err, "read input "+abs(t, dirA), "this run's input is "+abs(t, dirB), "same --input")
	if err := os.Truncate(filepath.Join(dirA, "b.txt"), 100); err != nil {
		t.Fatal(err)
	}
	_, err = sourcetest.Restore(file.TextSource{Path: dirA, SplitSize: 40}, cp, 3, nil)
	wantPermanent(t, "text source, truncated", err, "b.txt is 100 bytes long", "from byte 80 to byte 120")

	// Old checkpoints (enumerator state version 1): the splits show the input.
	c := file.LineSource{}.SplitCodec()
	started := c.AppendEncode(nil, file.Split{Path: fileA, End: 50 * 5, Started: true, Offset: 8, Lines: 2})
	for _, cp := range []*sourcetest.Checkpoint{
		{Enumerator: file.EnumeratorStateV1([]file.Split{{Path: fileA, End: 100}})}, // with the enumerator
		{Enumerator: file.EnumeratorStateV1(nil), Splits: [][][]byte{{started}}},    // with a reader
	} {
		_, err := sourcetest.Restore(file.LineSource{Path: dirB}, cp, 1, nil)
		wantPermanent(t, "version 1", err, "reads "+fileA, "this run's input is "+abs(t, dirB), "same --input")
	}
}

// A checkpoint of version 1 (before the enumerator recorded its input)
// still restores into the same input, at another parallelism, and the
// lines come exactly once with their numbers.
func TestRestoreVersion1EnumeratorState(t *testing.T) {
	dir, want := numberedInput(t, 40)
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	size := func(p string) int64 { st, _ := os.Stat(p); return st.Size() }
	// a.txt resumed after its line 9 ("a-1\n" ... "a-9\n": 9*4 bytes).
	c := file.LineSource{}.SplitCodec()
	cp := &sourcetest.Checkpoint{
		Enumerator: file.EnumeratorStateV1([]file.Split{{Path: b, End: size(b)}}),
		Splits:     [][][]byte{{c.AppendEncode(nil, file.Split{Path: a, End: size(a), Started: true, Offset: 36, Lines: 9})}},
	}
	src := file.LineSource{Path: dir}
	job, err := sourcetest.Restore(src, cp, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint right after the restore, of version 2, restores too.
	cp2, err := job.Checkpoint(2)
	job.Close()
	if err != nil {
		t.Fatal(err)
	}
	if cp2.Enumerator[0] != 2 {
		t.Fatalf("the checkpoint after the restore has enumerator state version %d", cp2.Enumerator[0])
	}
	var log bytes.Buffer
	src.Logger = slog.New(slog.NewTextHandler(&log, nil))
	got := runRestored(t, src, cp2, 3)
	if log.Len() > 0 {
		t.Errorf("restored from a checkpoint after a restore of version 1, it logged:\n%s", log.String())
	}
	slices.SortFunc(got, compareLines)
	want = slices.Delete(want, 0, 9)
	slices.SortFunc(want, compareLines)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d lines %v..., want %d", len(got), got[:min(3, len(got))], len(want))
	}
}

// A restored split whose file was truncated, replaced by a shorter one,
// or deleted after the checkpoint is a permanent error naming the file and
// the offset it was to be read from, never a reader that finds the end of
// the file early (or fails to open it on every restart) and a job that
// goes on without the lines.
func TestRestoreChangedFileRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(a, b string) error
		want   []string // besides the input's directory
	}{
		// The reader was in a.txt at byte 7*4 ("a-1\n".."a-7\n").
		{"truncated below the offset", func(a, _ string) error { return os.Truncate(a, 20) }, []string{"a.txt is 20 bytes long", "from byte 28"}},
		{"replaced by a shorter file", func(a, _ string) error {
			return os.WriteFile(a, []byte("a-1\na-2\na-3\na-4\na-5\na-6\na-7\na-8\n"), 0o644)
		}, []string{"a.txt is 32 bytes long", "from byte 28"}},
		{"read file deleted", func(a, _ string) error { return os.Remove(a) }, []string{"a.txt is gone", "from byte 28"}},
		{"pending file deleted", func(_, b string) error { return os.Remove(b) }, []string{"b.txt is gone", "from byte 0"}},
		{"pending file truncated", func(_, b string) error { return os.Truncate(b, 0) }, []string{"b.txt is 0 bytes long", "from byte 0"}},
	} {
		dir, _ := numberedInput(t, 9) // lines a-1 .. a-9: 36 bytes
		cp, read := checkpointMidway(t, file.LineSource{Path: dir}, 7)
		if len(read) != 7 {
			t.Fatalf("read %d lines before the checkpoint, want 7", len(read))
		}
		if err := tc.change(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{1, 2} {
			_, err := sourcetest.Restore(file.LineSource{Path: dir}, cp, p, nil)
			wantPermanent(t, tc.name, err, append(tc.want, dir, "without --from")...)
		}
	}
}

// A file added to the input directory after the checkpoint's run listed
// it is not read by the restored job (a bounded source reads the files it
// listed at its first start, as Flink's bounded FileSource does), nor are
// lines appended to a listed file: the log says so. The rest is read
// exactly once.
func TestRestoreLogsAddedFiles(t *testing.T) {
	dir, want := numberedInput(t, 30)
	cp, read := checkpointMidway(t, file.LineSource{Path: dir}, 5)
	added := filepath.Join(dir, "c.txt")
	os.WriteFile(added, []byte("c-1\n"), 0o644)
	f, err := os.OpenFile(filepath.Join(dir, "b.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "b-31")
	f.Close()
	var log bytes.Buffer
	src := file.LineSource{Path: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	got := append(read, runRestored(t, src, cp, 2)...)
	slices.SortFunc(got, compareLines)
	slices.SortFunc(want, compareLines)
	if !slices.Equal(got, want) {
		t.Fatalf("%d lines read, want the %d listed at the first start", len(got), len(want))
	}
	for _, s := range []string{"files were added to the input", "added=1", "first=" + added, "grew", "b.txt"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("the log does not say %q:\n%s", s, log.String())
		}
	}
}

// The enumerator's state of version 2 refuses to restore when truncated,
// with trailing bytes or an unknown version.
func TestEnumeratorStateCorrupt(t *testing.T) {
	dir, _ := numberedInput(t, 5)
	cp, _ := checkpointMidway(t, file.LineSource{Path: dir}, 2)
	st := cp.Enumerator
	if len(st) == 0 || st[0] != 2 {
		t.Fatalf("enumerator state %x, want version 2", st)
	}
	src := file.LineSource{Path: dir}
	if _, err := src.CreateEnumerator(nil, st); err != nil {
		t.Fatalf("the whole state: %v", err)
	}
	for k := range len(st) {
		if _, err := src.CreateEnumerator(nil, st[:k]); !errors.Is(err, codec.ErrTruncated) && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("cut to %d of %d bytes: %v", k, len(st), err)
		}
	}
	for _, bad := range [][]byte{append(slices.Clone(st), 0), append([]byte{9}, st[1:]...), {2, 0, 0, 0}} {
		if _, err := src.CreateEnumerator(nil, bad); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%x restored: %v", bad, err)
		}
	}
}
