package query_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// testConfig is the small stream every query's test runs over: 100 events
// a second of event time, so its 5 minutes span 30 tumbling windows of
// 10 s, many sessions and auctions that last up to 33 s, starting a minute
// before midnight (a day and an hour boundary). Short tests take fewer
// events.
func testConfig(t *testing.T) nexmark.Config {
	cfg := nexmark.DefaultConfig()
	cfg.Events = 30_000
	if testing.Short() {
		cfg.Events = 12_000
	}
	cfg.EventsPerSecond = 100
	cfg.BaseTime = 1_767_311_940_000 // 2026-01-01T23:59:00Z
	return cfg
}

// testEvents are cfg's events in order.
func testEvents(t *testing.T, cfg nexmark.Config) []nexmark.Event {
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := make([]nexmark.Event, cfg.Events)
	for n := range events {
		g.Event(int64(n), &events[n])
	}
	return events
}

// runQuery runs the query over cfg's events at parallelism p (from the
// file input, if not "") and returns its output rows, sorted.
func runQuery(t *testing.T, name string, cfg nexmark.Config, p int, input string) []string {
	t.Helper()
	return runQueryWith(t, name, query.Options{Config: cfg, Parallelism: p, Input: input})
}

// runQueryWith runs the query with o (its Output set here) and returns its
// output rows, sorted.
func runQueryWith(t *testing.T, name string, o query.Options) []string {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	o.Output = filepath.Join(t.TempDir(), "out.jsonl")
	s, err := query.Run(context.Background(), q, o)
	if err != nil {
		t.Fatalf("%s with %+v: %v", name, o, err)
	}
	if o.Config.Events > 0 && s.Events != o.Config.Events { // 0 with an input: the whole file
		t.Fatalf("%s with %+v: %d events counted, want %d", name, o, s.Events, o.Config.Events)
	}
	// A bounded job with checkpointing takes at least its final checkpoint.
	if (o.CheckpointInterval > 0) != (s.Checkpoints > 0) {
		t.Fatalf("%s with %+v: %d checkpoints completed", name, o, s.Checkpoints)
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
	if int64(len(rows)) != s.Rows {
		t.Fatalf("%s: %d rows in the file, the summary says %d", name, len(rows), s.Rows)
	}
	slices.Sort(rows)
	return rows
}

// wantLines are the rows as the query writes them, sorted.
func wantLines(t *testing.T, name string, want []query.Row) []string {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(want))
	for i, r := range want {
		lines[i] = query.JSON(q.Columns, r)
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		t.Fatalf("%s: the reference computation gives no rows; the test would prove nothing", name)
	}
	return lines
}

// checkQuery runs the query at parallelism 1 and 3 over generated events,
// and at 2 over the same events read from a file, and compares each output
// with want, the rows an independent computation of the query's SQL gives.
func checkQuery(t *testing.T, name string, cfg nexmark.Config, want []query.Row) {
	t.Helper()
	input := filepath.Join(t.TempDir(), "events.jsonl")
	writeEvents(t, cfg, input)
	lines := wantLines(t, name, want)
	for _, o := range []query.Options{{Parallelism: 1}, {Parallelism: 3}, {Parallelism: 2, Input: input}} {
		o.Config = cfg
		checkRows(t, name, o, runQueryWith(t, name, o), lines)
	}
}

// checkQueryWith runs the query once with o (a state backend, checkpoints)
// and compares its rows with want.
func checkQueryWith(t *testing.T, name string, o query.Options, want []query.Row) {
	t.Helper()
	checkRows(t, name, o, runQueryWith(t, name, o), wantLines(t, name, want))
}

func checkRows(t *testing.T, name string, o query.Options, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s at parallelism %d (input %q, backend %q): %d rows, want %d; %s",
			name, o.Parallelism, o.Input, o.StateBackend, len(got), len(want), firstDiff(got, want))
	}
}

// writeEvents writes cfg's events as `weir nexmark generate` does.
func writeEvents(t *testing.T, cfg nexmark.Config, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var line []byte
	for _, e := range testEvents(t, cfg) {
		line = nexmark.AppendJSON(line[:0], &e) // ends with a newline
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// firstDiff describes the first row where two sorted outputs differ.
func firstDiff(got, want []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(got) && j < len(want) && b.Len() < 2000 {
		switch {
		case got[i] == want[j]:
			i++
			j++
		case got[i] < want[j]:
			b.WriteString("unexpected " + got[i] + "; ")
			i++
		default:
			b.WriteString("missing " + want[j] + "; ")
			j++
		}
	}
	for ; i < len(got) && b.Len() < 2000; i++ {
		b.WriteString("unexpected " + got[i] + "; ")
	}
	for ; j < len(want) && b.Len() < 2000; j++ {
		b.WriteString("missing " + want[j] + "; ")
	}
	return b.String()
}
