package goldentrace

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Block is one command of a trace with what the file expects it to print.
type Block struct {
	Comments []string // the # lines before the command
	Cmd      string   // the command line, trimmed
	Want     []string // the expected output lines
	Line     int      // the command's line number, for messages
}

// Parse reads the trace at path; a malformed file fails the test.
func Parse(t testing.TB, path string) []Block {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var (
		blocks   []Block
		cur      *Block
		comments []string
		inWant   bool
		lineNo   int
	)
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "#"):
			comments = append(comments, line)
		case cur == nil && strings.TrimSpace(line) == "":
		case cur == nil:
			blocks = append(blocks, Block{Comments: comments, Cmd: strings.TrimSpace(line), Line: lineNo})
			comments = nil
			cur = &blocks[len(blocks)-1]
		case !inWant:
			if line != "----" {
				t.Fatalf("%s:%d: want ---- after the command, got %q", path, lineNo, line)
			}
			inWant = true
		case strings.TrimSpace(line) == "":
			cur, inWant = nil, false
		default:
			cur.Want = append(cur.Want, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil && !inWant {
		t.Fatalf("%s: last command has no ----", path)
	}
	return blocks
}

// Recorder compares each block's actual output with the expected one and,
// when rewriting, collects the file's new text.
type Recorder struct {
	path    string
	rewrite bool
	out     strings.Builder
}

// NewRecorder returns a Recorder for the trace at path; with rewrite, Check
// does not compare and Finish writes the actual output back to the file.
func NewRecorder(path string, rewrite bool) *Recorder {
	return &Recorder{path: path, rewrite: rewrite}
}

// Check records got as blk's output and reports a mismatch as an error of t.
func (r *Recorder) Check(t testing.TB, blk Block, got []string) {
	t.Helper()
	if r.out.Len() > 0 {
		r.out.WriteString("\n")
	}
	for _, c := range blk.Comments {
		r.out.WriteString(c + "\n")
	}
	r.out.WriteString(blk.Cmd + "\n----\n")
	for _, g := range got {
		r.out.WriteString(g + "\n")
	}
	if !r.rewrite && strings.Join(got, "\n") != strings.Join(blk.Want, "\n") {
		t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", r.path, blk.Line, blk.Cmd,
			strings.Join(got, "\n"), strings.Join(blk.Want, "\n"))
	}
}

// Finish writes the file again when rewriting.
func (r *Recorder) Finish(t testing.TB) {
	t.Helper()
	if !r.rewrite {
		return
	}
	if err := os.WriteFile(r.path, []byte(r.out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// RunAll runs run as a subtest for every trace file matching glob, and fails
// if there are fewer than min of them (a moved testdata folder must not
// pass by testing nothing).
func RunAll(t *testing.T, glob string, min int, run func(t *testing.T, path string)) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < min {
		t.Fatalf("found %d traces matching %s, want at least %d", len(files), glob, min)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { run(t, f) })
	}
}

// Fields splits a command line into words at spaces; a double-quoted
// part (which may hold spaces) is one word, or part of one, without its
// quotes. An unterminated quote is an error.
func Fields(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		quote bool
		have  bool
	)
	for _, r := range s {
		switch {
		case r == '"':
			quote, have = !quote, true
		case r == ' ' && !quote:
			if have {
				out = append(out, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if quote {
		return nil, errors.New("unterminated quote")
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}
