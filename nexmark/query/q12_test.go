package query_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
	"github.com/weirhq/weir/sink"
)

// TestQ12: its rows depend on the wall clock, so the test checks what holds
// whatever the timing: every row an aligned 10 s window of the run's
// processing time with a positive count, one row per bidder and window, and
// each bidder's counts summing to its bids (every bid counted once, the
// windows open at the end of the input fired too). It runs at parallelism 1
// and 3 on the heap and 2 on Pebble, on the wall clock (where the run
// mostly fits in one window, fired at the end of the input), and at
// parallelism 2 on a clock 50,000 times faster, where windows also fire by
// processing time while the bids flow.
func TestQ12(t *testing.T) {
	cfg := testConfig(t)
	bids := map[int64]int64{}
	for _, e := range testEvents(t, cfg) {
		if e.Type == nexmark.BidEvent {
			bids[e.Bid.Bidder]++
		}
	}
	for _, o := range []query.Options{{Parallelism: 1}, {Parallelism: 3}, {Parallelism: 2, StateBackend: "pebble", StateDir: t.TempDir()}} {
		start := time.Now().UnixMilli()
		o.Config = cfg
		rows := runQueryWith(t, "q12", o)
		end := time.Now().UnixMilli()
		q12Check(t, "parallelism "+string(rune('0'+o.Parallelism))+" "+o.StateBackend, rows, bids, start, end)
	}

	fast := &q12FastClock{start: time.Now(), speed: 50_000}
	start := fast.NowMillis()
	rows := q12RunOnClock(t, cfg, fast)
	end := fast.NowMillis()
	if windows := q12Check(t, "fast clock", rows, bids, start, end); windows < 2 {
		t.Errorf("fast clock: %d windows over %d ms of processing time; want at least 2 to see windows fire while bids flow", windows, end-start)
	}
}

// q12Check checks q12's rows against the bids per bidder, with windows
// within [start, end] of processing time, and returns how many windows
// there are.
func q12Check(t *testing.T, run string, rows []string, bids map[int64]int64, start, end int64) int {
	t.Helper()
	got := map[int64]int64{}
	type window struct{ bidder, start int64 }
	seen := map[window]bool{}
	starts := map[int64]bool{}
	for _, l := range rows {
		var r struct {
			Bidder    *int64 `json:"bidder"`
			BidCount  *int64 `json:"bid_count"`
			StartTime *int64 `json:"starttime"`
			EndTime   *int64 `json:"endtime"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Bidder == nil || r.BidCount == nil || r.StartTime == nil || r.EndTime == nil {
			t.Fatalf("%s: row %s: %v (want four integers)", run, l, err)
		}
		b, n, s, e := *r.Bidder, *r.BidCount, *r.StartTime, *r.EndTime
		if e-s != 10_000 || s%10_000 != 0 || n < 1 || e <= start || s > end {
			t.Errorf("%s: row %s: want a positive count in an aligned 10 s window of the run's time [%d, %d]", run, l, start, end)
		}
		if seen[window{b, s}] {
			t.Errorf("%s: two rows for bidder %d and window %d", run, b, s)
		}
		seen[window{b, s}], starts[s] = true, true
		got[b] += n
	}
	if len(got) != len(bids) {
		t.Errorf("%s: %d bidders counted, want %d", run, len(got), len(bids))
	}
	for b, n := range bids {
		if got[b] != n {
			t.Errorf("%s: bidder %d: %d bids counted, want %d", run, b, got[b], n)
		}
	}
	t.Logf("%s: %d rows in %d windows", run, len(rows), len(starts))
	return len(starts)
}

// q12RunOnClock runs q12 at parallelism 2 with processing time from c.
func q12RunOnClock(t *testing.T, cfg nexmark.Config, c clock.Clock) []string {
	q, err := query.Lookup("q12")
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, Mode: weir.Streaming, Clock: c})
	o := query.Options{Config: cfg, Parallelism: 2}
	events, _, err := query.Events(env, o)
	if err != nil {
		t.Fatal(err)
	}
	var out q12Lines
	in := query.NewInput(q, events, cfg, func(s weir.DataStream[string]) {
		weir.SinkTo(s, &out, "rows").SetParallelism(1)
	})
	if err := q.Build(in); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Execute(context.Background(), "q12 on a fast clock"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out.lines)
	return out.lines
}

// q12Lines is a sink keeping what it gets.
type q12Lines struct {
	mu    sync.Mutex
	lines []string
}

func (l *q12Lines) CreateWriter(sink.Context) (sink.Writer[string], error) { return l, nil }
func (l *q12Lines) Write(line string, _ int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	return nil
}
func (l *q12Lines) Flush(bool) error { return nil }
func (l *q12Lines) Close() error     { return nil }

// q12FastClock is processing time running speed times faster than the
// wall clock from start.
type q12FastClock struct {
	start time.Time
	speed int64
}

func (c *q12FastClock) NowMillis() int64 {
	return c.start.UnixMilli() + time.Since(c.start).Milliseconds()*c.speed
}
func (c *q12FastClock) Now() time.Time { return time.Now() }
func (c *q12FastClock) NewTimer(d time.Duration) clock.Timer {
	return q12Timer{time.NewTimer(d / time.Duration(c.speed))}
}

type q12Timer struct{ t *time.Timer }

func (t q12Timer) C() <-chan time.Time { return t.t.C }
func (t q12Timer) Stop() bool          { return t.t.Stop() }
