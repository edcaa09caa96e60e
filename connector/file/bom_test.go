package file_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/source"
	"go.uber.org/goleak"
)

const bom = "\ufeff"

// A UTF-8 byte order mark at the start of a file is not part of its first
// line, in every split layout (the TextSource splits a file at parallelism
// 2 and 3; the LineSource reads it whole) and from standard input; a mark
// later in the file is data and stays.
func TestByteOrderMarkIsStripped(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(bom + "first\tline\n")
	for i := range 2000 {
		b.WriteString("line " + strings.Repeat("x", i%50) + "\n")
	}
	b.WriteString(bom + "kept\n")
	path := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(strings.TrimPrefix(b.String(), bom), "\n"), "\n")
	slices.Sort(want)
	for _, p := range []int{1, 2, 3} {
		got := readAll(t, file.TextSource{Path: path}, p)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("TextSource at parallelism %d: %d lines, want %d; first %q", p, len(got), len(want), got[:min(3, len(got))])
		}
	}
	lines := readSubtasks[file.Line](t, file.LineSource{Path: path}, 1)[0]
	if len(lines) != len(want) || lines[0].Text != "first\tline" || lines[0].Number != 1 || lines[len(lines)-1].Text != bom+"kept" {
		t.Fatalf("LineSource: %d lines, first %+v, last %+v", len(lines), lines[0], lines[len(lines)-1])
	}
	// Standard input, a stream.
	lines = readSubtasks[file.Line](t, file.LineSource{Path: "-", Stdin: strings.NewReader(bom + "a\t1\n" + bom + "b\t2\n")}, 1)[0]
	if len(lines) != 2 || lines[0].Text != "a\t1" || lines[1].Text != bom+"b\t2" {
		t.Fatalf("stdin: %+v", lines)
	}
	// A file that is only the mark is empty.
	only := filepath.Join(dir, "only.txt")
	os.WriteFile(only, []byte(bom), 0o644)
	if got := readAll(t, file.TextSource{Path: only}, 1); len(got) != 0 {
		t.Fatalf("a file of only the mark: %q", got)
	}
}

// A restore that finds standard input partly read fails permanently
// (failure.IsPermanent): every restart from that checkpoint would fail the
// same way.
func TestPartlyReadStdinIsPermanent(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("a\nb\n")
	src := file.LineSource{Path: "-", Stdin: r}
	job := openOne[file.Line](t, src)
	pollUntil(t, job, "a line", func(source.Status) bool { return len(job.Reader(0).Out) > 0 })
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	job.Close()
	_, err = sourcetest.Restore[file.Line](src, cp, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "standard input") || !failure.IsPermanent(err) {
		t.Fatalf("restore: %v (permanent: %v), want a permanent error naming standard input", err, failure.IsPermanent(err))
	}
}
