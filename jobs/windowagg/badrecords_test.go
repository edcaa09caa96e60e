package windowagg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/windowagg"
)

func runAgg(t *testing.T, o windowagg.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.Window.Kind == "" {
		o.Window = windowagg.Spec{Kind: "tumbling", Size: 10 * time.Millisecond}
	}
	o.Punctuated = true
	return windowagg.Run(ctx, o)
}

func withCheckpoints(dir string) weir.Config {
	return weir.Config{Checkpointing: &weir.CheckpointConfig{Interval: 50 * time.Millisecond, Dir: filepath.Join(dir, "ck")}}
}

// outLines reads an output: a file, or an exactly-once directory.
func outLines(t *testing.T, path string) []string {
	t.Helper()
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return committedLines(t, path)
	}
	return readLines(t, path)
}

// A bad line ends the job at once with a permanent error naming file and
// line, with checkpoints (where it was restarted for ever) and without.
func TestBadLineFailsPermanently(t *testing.T) {
	for _, ck := range []bool{false, true} {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		os.WriteFile(in, []byte(`{"ts": 1, "key": "a", "value": 1}`+"\n"+`{"ts": 2, "key": "a"}`+"\n"), 0o644)
		o := windowagg.Options{Input: in, Output: filepath.Join(dir, "out")}
		if ck {
			o.Config = withCheckpoints(dir)
		}
		start := time.Now()
		err := runAgg(t, o)
		if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), in+` line 2: no "value"`) {
			t.Fatalf("checkpoints %v: %v, want a permanent error naming line 2", ck, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("checkpoints %v: failing took %v", ck, took)
		}
	}
}

// A window whose sum leaves int64 fails the job permanently, naming key and
// window (the sum wrapped silently); sums that stay in range are exact up
// to the int64 bounds.
func TestSumOverflowFailsNamingKeyAndWindow(t *testing.T) {
	for _, kind := range []windowagg.Spec{
		{Kind: "tumbling", Size: 10 * time.Millisecond},
		{Kind: "sliding", Size: 10 * time.Millisecond, Slide: 5 * time.Millisecond},
		{Kind: "session", Gap: 5 * time.Millisecond},
	} {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		os.WriteFile(in, []byte(`{"ts": 1, "key": "ok", "value": 9223372036854775806}
{"ts": 2, "key": "ok", "value": 1}
{"ts": 3, "key": "neg", "value": -9223372036854775808}
{"ts": 1, "key": "big", "value": 9223372036854775807}
{"ts": 3, "key": "big", "value": 1}
`), 0o644)
		err := runAgg(t, windowagg.Options{Input: in, Output: filepath.Join(dir, "out"), Window: kind, Config: withCheckpoints(dir)})
		if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), `key "big" window [`) || !strings.Contains(err.Error(), "overflows int64") {
			t.Fatalf("%s: %v, want a permanent error naming key big and its window", kind.Kind, err)
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"ts": 1, "key": "ok", "value": 9223372036854775806}
{"ts": 2, "key": "ok", "value": 1}
{"ts": 3, "key": "neg", "value": -9223372036854775807}
{"ts": 4, "key": "neg", "value": -1}
`), 0o644)
	out := filepath.Join(dir, "out")
	if err := runAgg(t, windowagg.Options{Input: in, Output: out}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"key": "neg", "window_start": 0, "window_end": 10, "count": 2, "sum": -9223372036854775808, "min": -9223372036854775807, "max": -1}`,
		`{"key": "ok", "window_start": 0, "window_end": 10, "count": 2, "sum": 9223372036854775807, "min": 1, "max": 9223372036854775806}`,
	}
	if got := readLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An element at the end of int64 time is an exact result when its window
// fits in int64 (it was dropped silently, exit 0), and a bad record naming
// file, line and timestamp when it does not.
func TestWindowsAtTheEndsOfTime(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"ts": -9223372036854775807, "key": "b", "value": 2}
{"ts": 9223372036854775806, "key": "a", "value": 5}
{"ts": 9223372036854775800, "key": "a", "value": 1}
`), 0o644)
	out := filepath.Join(dir, "out")
	spec := windowagg.Spec{Kind: "tumbling", Size: time.Millisecond}
	if err := runAgg(t, windowagg.Options{Input: in, Output: out, Window: spec, OutOfOrderness: time.Second}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"key": "a", "window_start": 9223372036854775800, "window_end": 9223372036854775801, "count": 1, "sum": 1, "min": 1, "max": 1}`,
		`{"key": "a", "window_start": 9223372036854775806, "window_end": 9223372036854775807, "count": 1, "sum": 5, "min": 5, "max": 5}`,
		`{"key": "b", "window_start": -9223372036854775807, "window_end": -9223372036854775806, "count": 1, "sum": 2, "min": 2, "max": 2}`,
	}
	if got := readLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, c := range []struct {
		spec windowagg.Spec
		ts   int64
	}{
		{windowagg.Spec{Kind: "tumbling", Size: time.Millisecond}, math.MaxInt64},
		{windowagg.Spec{Kind: "tumbling", Size: time.Second}, math.MaxInt64 - 7},
		{windowagg.Spec{Kind: "sliding", Size: 10 * time.Millisecond, Slide: 5 * time.Millisecond}, math.MaxInt64 - 3},
		{windowagg.Spec{Kind: "sliding", Size: 10 * time.Millisecond, Slide: 5 * time.Millisecond}, math.MinInt64 + 2},
		{windowagg.Spec{Kind: "session", Gap: time.Second}, math.MaxInt64 - 999},
		{windowagg.Spec{Kind: "tumbling", Size: time.Millisecond}, math.MinInt64},
	} {
		os.WriteFile(in, []byte(`{"ts": 1, "key": "a", "value": 1}`+"\n"+fmt.Sprintf(`{"ts": %d, "key": "z", "value": 1}`, c.ts)+"\n"), 0o644)
		err := runAgg(t, windowagg.Options{Input: in, Output: filepath.Join(dir, "o"), Window: c.spec})
		if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf(`%s line 2: "ts" %d: `, in, c.ts)) {
			t.Fatalf("%+v ts %d: %v, want a bad-record error naming line 2 and the timestamp", c.spec, c.ts, err)
		}
		skipped := filepath.Join(dir, "skipped")
		os.Remove(skipped)
		if err := runAgg(t, windowagg.Options{Input: in, Output: skipped, Window: c.spec, BadRecords: badrecords.Skip}); err != nil {
			t.Fatalf("%+v ts %d, skip: %v", c.spec, c.ts, err)
		}
		for _, l := range readLines(t, skipped) {
			if !strings.Contains(l, `"key": "a"`) {
				t.Fatalf("%+v ts %d, skip: output %s", c.spec, c.ts, l)
			}
		}
	}
}

// Skip and dead-letter give exactly the reference's windows of the good
// lines, with and without checkpoints; dead-letter writes each bad line once
// with its origin. Blank lines and a leading byte order mark are not bad.
func TestBadRecordPoliciesExact(t *testing.T) {
	r := testseed.Rand(t, 35)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	type agg struct{ n, sum, lo, hi int64 }
	ref := map[[2]int64]*agg{} // key index, window start
	var b strings.Builder
	b.WriteString("\ufeff")
	var bad []string
	ts := int64(1000)
	badKinds := []string{`{"ts": 1, "key": "a"}`, `not json`, `{"ts": "5", "key": "a", "value": 1}`, `{"ts": 1.5, "key": "a", "value": 1}`}
	for i := 1; i <= 2000; i++ {
		switch x := r.IntN(12); {
		case x == 0:
			text := badKinds[r.IntN(len(badKinds))]
			b.WriteString(text + "\n")
			bad = append(bad, fmt.Sprintf("%s:%d\t%s", in, i, text))
		case x == 1 && i > 1:
			b.WriteString("  \t\n")
		default:
			ts += r.Int64N(7)
			k, v := r.Int64N(4), r.Int64N(1000)-500
			fmt.Fprintf(&b, `{"ts": %d, "key": "k%d", "value": %d}`+"\n", ts, k, v)
			w := [2]int64{k, ts - ts%100}
			a := ref[w]
			if a == nil {
				a = &agg{lo: v, hi: v}
				ref[w] = a
			}
			a.n, a.sum, a.lo, a.hi = a.n+1, a.sum+v, min(a.lo, v), max(a.hi, v)
		}
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	var want []string
	for w, a := range ref {
		want = append(want, fmt.Sprintf(`{"key": "k%d", "window_start": %d, "window_end": %d, "count": %d, "sum": %d, "min": %d, "max": %d}`,
			w[0], w[1], w[1]+100, a.n, a.sum, a.lo, a.hi))
	}
	slices.Sort(want)
	slices.Sort(bad)
	if len(bad) == 0 {
		t.Fatal("no bad line")
	}
	spec := windowagg.Spec{Kind: "tumbling", Size: 100 * time.Millisecond}
	for _, ck := range []bool{false, true} {
		for _, p := range []badrecords.Policy{badrecords.Skip, badrecords.DeadLetter} {
			sub := filepath.Join(dir, fmt.Sprintf("%v-%v", ck, p))
			os.Mkdir(sub, 0o755)
			o := windowagg.Options{Input: in, Output: filepath.Join(sub, "out"), Window: spec, BadRecords: p}
			if p == badrecords.DeadLetter {
				o.DeadLetter = filepath.Join(sub, "dead")
			}
			if ck {
				o.Config = withCheckpoints(sub)
			}
			if err := runAgg(t, o); err != nil {
				t.Fatalf("checkpoints %v, %v: %v", ck, p, err)
			}
			if got := outLines(t, o.Output); !slices.Equal(got, want) {
				t.Fatalf("checkpoints %v, %v: %d results, want %d", ck, p, len(got), len(want))
			}
			if p != badrecords.DeadLetter {
				continue
			}
			var got []string
			for _, l := range outLines(t, o.DeadLetter) {
				var d struct{ Source, Error, Record string }
				if err := json.Unmarshal([]byte(l), &d); err != nil || d.Error == "" {
					t.Fatalf("dead letter %q: %v", l, err)
				}
				got = append(got, d.Source+"\t"+d.Record)
			}
			slices.Sort(got)
			if !slices.Equal(got, bad) {
				t.Fatalf("checkpoints %v: dead letters\n%s\nwant\n%s", ck, strings.Join(got, "\n"), strings.Join(bad, "\n"))
			}
		}
	}
}
