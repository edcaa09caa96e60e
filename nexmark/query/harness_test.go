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

// runQuery runs the query over cfg's events at parallelism p and returns
// its output rows, sorted.
func runQuery(t *testing.T, name string, cfg nexmark.Config, p int, input string) []string {
	t.Helper()
	q, err := query.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	o := query.Options{Config: cfg, Parallelism: p, Output: out, Input: input}
	s, err := query.Run(context.Background(), q, o)
	if err != nil {
		t.Fatalf("%s at parallelism %d: %v", name, p, err)
	}
	if s.Events != cfg.Events {
		t.Fatalf("%s at parallelism %d: %d events counted, want %d", name, p, s.Events, cfg.Events)
	}
	f, err := os.Open(out)
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

// checkQuery runs the query at parallelism 1 and 3 over generated events,
// and at 2 over the same events read from a file, and compares each output
// with want, the rows an independent computation of the query's SQL gives.
func checkQuery(t *testing.T, name string, cfg nexmark.Config, want []query.Row) {
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
	if len(wantLines) == 0 {
		t.Fatalf("%s: the reference computation gives no rows; the test would prove nothing", name)
	}
	input := filepath.Join(t.TempDir(), "events.jsonl")
	writeEvents(t, cfg, input)
	for _, run := range []struct {
		p     int
		input string
	}{{1, ""}, {3, ""}, {2, input}} {
		got := runQuery(t, name, cfg, run.p, run.input)
		if !slices.Equal(got, wantLines) {
			t.Errorf("%s at parallelism %d (input %q): %d rows, want %d; %s", name, run.p, run.input, len(got), len(wantLines), firstDiff(got, wantLines))
		}
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
