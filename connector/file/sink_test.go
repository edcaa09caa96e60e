package file_test

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/connector/file"
)

// fakeSinkCtx is a sink.Context.
type fakeSinkCtx struct {
	subtask, p, attempt int
	checkpointing       bool
	restored            int64
	lineage             string
	done                chan struct{}
}

func (c *fakeSinkCtx) Subtask() int              { return c.subtask }
func (c *fakeSinkCtx) Parallelism() int          { return c.p }
func (c *fakeSinkCtx) Attempt() int              { return c.attempt }
func (c *fakeSinkCtx) Checkpointing() bool       { return c.checkpointing }
func (c *fakeSinkCtx) Canceled() <-chan struct{} { return c.done }
func (c *fakeSinkCtx) RestoredCheckpoint() int64 { return c.restored }
func (c *fakeSinkCtx) Lineage() string           { return c.lineage }
func (c *fakeSinkCtx) CheckpointInterval() time.Duration {
	if c.checkpointing {
		return time.Second
	}
	return 0
}

func sinkCtx(subtask, p int) *fakeSinkCtx { return &fakeSinkCtx{subtask: subtask, p: p} }

// writeLines runs one sink subtask over lines to the end of its input.
func writeLines(sink file.TextSink[string], subtask, p int, lines ...string) error {
	w, err := sink.CreateWriter(sinkCtx(subtask, p))
	if err != nil {
		return err
	}
	defer w.Close()
	for _, l := range lines {
		if err := w.Write(l, math.MinInt64); err != nil {
			return err
		}
	}
	return w.Flush(true)
}

func textSink(path string) file.TextSink[string] {
	return file.TextSink[string]{Path: path, Format: func(s string) string { return s }}
}

// listTree lists every path under dir with its type, for checking what a
// sink left behind.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel+" "+d.Type().String())
		return nil
	})
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goTypeNames are signs of an error message that shows Go internals.
var goTypeNames = []string{"*fs.", "*os.", "%!", "Go struct", "of type"}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "outdir"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "file.txt"), []byte("x\n"), 0o644))
	must(os.Symlink("outdir", filepath.Join(dir, "link-to-dir")))
	must(os.Symlink("file.txt", filepath.Join(dir, "link-to-file")))
	must(os.MkdirAll(filepath.Join(dir, "parts", "part-1"), 0o755))
	before := listTree(t, dir)
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		path        string
		parallelism int
		err         string // "" when valid
	}{
		{p("outdir"), 1, "output " + p("outdir") + " is a directory; give a file path (or a directory with parallelism above 1)"},
		{p("link-to-dir"), 1, "is a directory"},
		{p("outdir"), 2, ""},
		{p("link-to-dir"), 3, ""},
		{p("file.txt"), 1, ""},
		{p("link-to-file"), 1, ""},
		{p("file.txt"), 2, "output " + p("file.txt") + " is not a directory; at parallelism 2"},
		{p("missing/deeper/out.txt"), 1, ""},
		{p("missing/deeper"), 4, ""},
		{p("file.txt/sub/out.txt"), 1, "cannot create directory " + p("file.txt/sub") + ": " + p("file.txt") + " is not a directory"},
		{p("file.txt/sub"), 2, p("file.txt") + " is not a directory"},
		{p("parts"), 2, "output " + p("parts/part-1") + " is a directory"},
		{p("parts"), 1, "is a directory"},
		{"-", 1, ""},
		{"-", 3, "output - (standard output) takes one writer, but the sink has parallelism 3"},
		{"", 1, "output path is empty"},
	} {
		err := textSink(tc.path).Validate(tc.parallelism)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Validate(%s, parallelism %d) = %v, want no error", tc.path, tc.parallelism, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Validate(%s, parallelism %d) = %v, want an error containing %q", tc.path, tc.parallelism, err, tc.err)
		case err != nil:
			for _, bad := range goTypeNames {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("Validate(%s, parallelism %d): %q shows %q", tc.path, tc.parallelism, err, bad)
				}
			}
		}
	}
	if after := listTree(t, dir); !slices.Equal(after, before) {
		t.Fatalf("Validate changed the file system:\nbefore %v\nafter  %v", before, after)
	}
}

// An output that is a directory fails the sink in CreateWriter, before any
// record, and leaves nothing behind.
func TestOpenFailsOnDirectory(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	before := listTree(t, dir)
	_, err := textSink(out).CreateWriter(sinkCtx(0, 1))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open = %v, want an error saying the output is a directory", err)
	}
	if after := listTree(t, dir); !slices.Equal(after, before) {
		t.Fatalf("a failed Open left %v", after)
	}
}

// Path "-" writes standard output (here injected) directly, and flushes on
// the task's buffer timeout.
func TestStdoutOutput(t *testing.T) {
	t.Chdir(t.TempDir()) // nothing may be created in the working directory
	var buf bytes.Buffer
	sink := textSink("-")
	sink.Stdout = &buf
	w, err := sink.CreateWriter(sinkCtx(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write("a", 0)
	w.Write("b", 0)
	if buf.Len() != 0 {
		t.Fatalf("before Flush: %q", buf.String())
	}
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "a\nb\n" {
		t.Fatalf("after Flush: %q", buf.String())
	}
	w.Write("c", 0)
	if err := w.Flush(true); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if buf.String() != "a\nb\nc\n" {
		t.Fatalf("got %q", buf.String())
	}
	if left := listTree(t, "."); len(left) != 1 {
		t.Fatalf("the working directory holds %v", left)
	}
}

// A symbolic link is written through: the file it points to gets the
// output (its temporary file next to it), and the link stays a link.
func TestSymlinkOutputIsWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	os.Mkdir(filepath.Join(dir, "b"), 0o755)
	target := filepath.Join(dir, "b", "real.txt")
	os.WriteFile(target, []byte("old\n"), 0o644)
	link := filepath.Join(dir, "a", "link.txt")
	if err := os.Symlink("../b/real.txt", link); err != nil {
		t.Skip(err)
	}
	if err := writeLines(textSink(link), 0, 1, "new", "lines"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link: %v, %v", st, err)
	}
	if got := readFile(t, target); got != "new\nlines\n" {
		t.Fatalf("target holds %q", got)
	}
	want := []string{". d---------", "a d---------", "a/link.txt L---------", "b d---------", "b/real.txt ----------"}
	if got := listTree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}

	// A link to a file that does not exist yet creates that file.
	dangling := filepath.Join(dir, "a", "dangling")
	os.Symlink("../b/new.txt", dangling)
	if err := writeLines(textSink(dangling), 0, 1, "x"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "b", "new.txt")); got != "x\n" {
		t.Fatalf("new target holds %q", got)
	}
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the dangling link is no longer a link: %v, %v", st, err)
	}
}

// A character device is written directly, never replaced by a file (here
// through a link, so a sink that renamed would replace only the link).
func TestDeviceOutputIsWrittenDirectly(t *testing.T) {
	st, err := os.Stat(os.DevNull)
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Skip("no character device to write")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Skip(err)
	}
	if err := textSink(link).Validate(1); err != nil {
		t.Fatal(err)
	}
	if err := writeLines(textSink(link), 0, 1, "gone"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link to %s was replaced: %v, %v", os.DevNull, st, err)
	}
	if got := listTree(t, dir); len(got) != 2 {
		t.Fatalf("left %v", got)
	}
}

// When the final rename fails, the temporary file is removed: a failed job
// leaves nothing hidden behind. So does a job that fails before the end.
func TestFailedOutputLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	w, err := textSink(out).CreateWriter(sinkCtx(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write("x", 0)
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
	if got := listTree(t, dir); len(got) != 2 || !strings.HasPrefix(got[1], ".out.txt.inprogress ") {
		t.Fatalf("while writing: %v, want only the hidden temporary file", got)
	}
	// Something makes the destination a non-empty directory meanwhile.
	os.MkdirAll(filepath.Join(out, "in-the-way"), 0o755)
	err = w.Flush(true)
	w.Close()
	if err == nil {
		t.Fatal("Finish renamed onto a directory")
	}
	want := []string{". d---------", "out.txt d---------", "out.txt/in-the-way d---------"}
	if got := listTree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after a failed rename: %v, want %v", got, want)
	}

	// Canceled before the end of input: Close without Finish.
	dir = t.TempDir()
	w, err = textSink(filepath.Join(dir, "out.txt")).CreateWriter(sinkCtx(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write("x", 0)
	w.Close()
	if got := listTree(t, dir); len(got) != 1 {
		t.Fatalf("after a canceled job: %v", got)
	}
}

// At parallelism above 1 every subtask writes its part file in the output
// directory, created if missing.
func TestPartFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for i := range 3 {
		if err := writeLines(textSink(out), i, 3, "line of "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if got := readFile(t, filepath.Join(out, "part-"+strconv.Itoa(i))); got != "line of "+strconv.Itoa(i)+"\n" {
			t.Fatalf("part-%d holds %q", i, got)
		}
	}
	if got := listTree(t, out); len(got) != 4 {
		t.Fatalf("left %v", got)
	}
}
