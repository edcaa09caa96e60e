package goldentrace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// recordingTB counts the errors Check reports instead of failing the test.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Helper() {}

const trace = `# first
add 1
----
one

add 2
----
two
lines
`

func TestParseCheckRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := Parse(t, path)
	if len(blocks) != 2 || blocks[0].Cmd != "add 1" || blocks[0].Line != 2 || len(blocks[0].Comments) != 1 ||
		len(blocks[1].Want) != 2 || blocks[1].Want[1] != "lines" {
		t.Fatalf("parsed %+v", blocks)
	}

	// A matching output passes; a different one is reported with its line.
	rec, tb := NewRecorder(path, false), &recordingTB{TB: t}
	rec.Check(tb, blocks[0], []string{"one"})
	rec.Check(tb, blocks[1], []string{"two", "other"})
	if len(tb.errors) != 1 {
		t.Fatalf("errors %q, want one for the second block", tb.errors)
	}

	// Rewriting writes the actual output back, comments kept.
	rec = NewRecorder(path, true)
	rec.Check(tb, blocks[0], []string{"one"})
	rec.Check(tb, blocks[1], []string{"three"})
	rec.Finish(t)
	got, _ := os.ReadFile(path)
	if want := "# first\nadd 1\n----\none\n\nadd 2\n----\nthree\n"; string(got) != want {
		t.Fatalf("rewritten file %q, want %q", got, want)
	}
}

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"a  b c", []string{"a", "b", "c"}, false},
		{`lost tm-1 cause="no heartbeat for 5s" at=3`, []string{"lost", "tm-1", "cause=no heartbeat for 5s", "at=3"}, false},
		{`x ""`, []string{"x", ""}, false},
		{`x "open`, nil, true},
	} {
		got, err := Fields(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("Fields(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
