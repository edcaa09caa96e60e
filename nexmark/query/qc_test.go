package query_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirhq/weir/nexmark/query"
)

// qcCheckWithOptions runs a query once with o (its Output set here) and
// compares its rows with want, as checkQuery does for its runs.
func qcCheckWithOptions(t *testing.T, name string, o query.Options, want []query.Row) {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("%s: the reference computation gives no rows", name)
	}
	wantLines := make([]string, len(want))
	for i, r := range want {
		wantLines[i] = query.JSON(q.Columns, r)
	}
	slices.Sort(wantLines)
	o.Output = filepath.Join(t.TempDir(), "out.jsonl")
	if _, err := query.Run(context.Background(), q, o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, wantLines) {
		t.Errorf("%s with %+v: %d rows, want %d", name, o, len(got), len(wantLines))
		for i := 0; i < len(got) && i < len(wantLines); i++ {
			if got[i] != wantLines[i] {
				t.Errorf("first difference: got %s, want %s", got[i], wantLines[i])
				break
			}
		}
	}
}

// qcCountFiles counts the files under dir.
func qcCountFiles(t *testing.T, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
