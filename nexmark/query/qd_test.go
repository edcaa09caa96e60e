package query_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// qdRun runs the query with o (its Config and Output set here) and
// returns its output rows, sorted.
func qdRun(t *testing.T, name string, cfg nexmark.Config, o query.Options) []string {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	o.Config = cfg
	o.Output = filepath.Join(t.TempDir(), "out.jsonl")
	s, err := query.Run(context.Background(), q, o)
	if err != nil {
		t.Fatalf("%s with %+v: %v", name, o, err)
	}
	if s.Events != cfg.Events {
		t.Fatalf("%s: %d events counted, want %d", name, s.Events, cfg.Events)
	}
	f, err := os.Open(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rows = append(rows, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows
}

// qdCheckPebble runs the query on the Pebble state backend at parallelism
// 2 and compares its rows with want.
func qdCheckPebble(t *testing.T, name string, cfg nexmark.Config, want []query.Row) {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	wantLines := make([]string, len(want))
	for i, r := range want {
		wantLines[i] = query.JSON(q.Columns, r)
	}
	slices.Sort(wantLines)
	got := qdRun(t, name, cfg, query.Options{Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()})
	if !slices.Equal(got, wantLines) {
		t.Errorf("%s on pebble: %d rows, want %d", name, len(got), len(wantLines))
	}
}
