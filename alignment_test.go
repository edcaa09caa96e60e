package weir_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/source"
)

// alignmentRun runs two generator sources of very different event-time
// speeds into one sink: slow emits timestamps 0, 1, 2, ... ms at a limited
// rate, fast 0, step, 2*step, ... as fast as it can. Both use punctuated
// watermarks (highest timestamp - 1). It returns the largest lead of a
// fast timestamp over the highest slow timestamp generated before it, while
// slow has not generated its last record (measured in the generators'
// functions, which run as the readers make each batch; after slow's end
// the group lets fast go), and the number of records of each source that
// reached the sink.
func alignmentRun(t *testing.T, align bool, slowN, fastN, step int64, maxDrift time.Duration) (lead, slowGot, fastGot int64) {
	t.Helper()
	var slowMax, maxLead atomic.Int64
	slowMax.Store(-1)
	maxLead.Store(-1 << 62)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond})
	strategy := func(ts func(int64) int64) weir.WatermarkStrategy[int64] {
		ws := weir.WatermarkStrategy[int64]{Timestamp: ts, Generator: weir.PunctuatedWatermarks[int64](0)}
		if align {
			ws = ws.WithWatermarkAlignment("g", maxDrift, 10*time.Millisecond)
		}
		return ws
	}
	slow := weir.FromSourceWithWatermarks[int64, datagen.Split](env, datagen.Generator[int64]{Count: slowN, RatePerSecond: float64(slowN) * 2,
		Fn: func(i int64) int64 {
			if i > slowMax.Load() {
				slowMax.Store(i)
			}
			return i
		}}, strategy(func(v int64) int64 { return v }), "slow")
	fast := weir.FromSourceWithWatermarks[int64, datagen.Split](env, datagen.Generator[int64]{Count: fastN,
		Fn: func(i int64) int64 {
			ts := i * step
			if s := slowMax.Load(); s < slowN-1 {
				if l := ts - s; l > maxLead.Load() {
					maxLead.Store(l)
				}
			}
			return -ts - 1 // fast records are negative, so the sink tells them apart
		}}, strategy(func(v int64) int64 { return -(v + 1) }), "fast")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := weir.ExecuteAndCollect(ctx, env, weir.Union(slow, fast), "alignment")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if v < 0 {
			fastGot++
		} else {
			slowGot++
		}
	}
	return maxLead.Load(), slowGot, fastGot
}

// Watermark alignment: with a group, the fast source never generates a
// record more than maxDrift + one batch check's worth (64 records of step
// ms, the built-in readers' ShouldYield granularity) ahead of the slow
// source's highest timestamp, and both finish with all their records (no
// deadlock: after slow ends, fast goes on alone). The control without
// alignment shows that the drift is otherwise large, so the bound is not
// met by accident.
func TestWatermarkAlignmentBoundsDrift(t *testing.T) {
	const slowN, fastN, step = 1000, 4000, 5
	const maxDrift = 200 * time.Millisecond
	bound := maxDrift.Milliseconds() + 64*step
	lead, slowGot, fastGot := alignmentRun(t, true, slowN, fastN, step, maxDrift)
	if slowGot != slowN || fastGot != fastN {
		t.Fatalf("aligned: %d slow and %d fast records reached the sink, want %d and %d", slowGot, fastGot, slowN, fastN)
	}
	if lead > bound {
		t.Errorf("aligned: fast generated a record %d ms ahead of slow, beyond max drift + one batch check (%d ms)", lead, bound)
	}
	t.Logf("aligned: largest lead %d ms (bound %d)", lead, bound)

	lead, slowGot, fastGot = alignmentRun(t, false, slowN, fastN, step, maxDrift)
	if slowGot != slowN || fastGot != fastN {
		t.Fatalf("control: %d slow and %d fast records reached the sink, want %d and %d", slowGot, fastGot, slowN, fastN)
	}
	if lead <= 5*bound {
		t.Errorf("control without alignment: largest lead %d ms, not far beyond the bound %d ms; the test proves nothing", lead, bound)
	}
	t.Logf("control: largest lead %d ms", lead)
}

// speedSplits has two splits in one reader: "slow" emits timestamps 0, 1,
// 2, ... and "fast" 0, 10, 20, ..., n records each, up to 8 per split and
// poll, a poll per millisecond. It pauses splits (source.SplitPauser). A
// record is its timestamp; fast ones are negative (-ts-1). lead is the
// largest lead of a fast timestamp over the highest slow one emitted
// before it, while slow has records left.
type speedSplits struct {
	n    int64
	lead *atomic.Int64
}

func (speedSplits) Boundedness() source.Boundedness { return source.Bounded }
func (speedSplits) SplitCodec() codec.Codec[string] { return codec.String() }
func (speedSplits) CreateEnumerator(ctx source.EnumeratorContext[string], restored []byte) (source.Enumerator[string], error) {
	return &speedEnum{ctx}, nil
}
func (s speedSplits) CreateReader(source.ReaderContext) (source.Reader[int64, string], error) {
	return &speedReader{src: s, paused: map[string]bool{}, slowMax: -1}, nil
}

type speedEnum struct {
	ctx source.EnumeratorContext[string]
}

func (e *speedEnum) Start() error { return nil }
func (e *speedEnum) AddReader(subtask int) error {
	e.ctx.Assign(subtask, "slow", "fast")
	e.ctx.NoMoreSplits(subtask)
	return nil
}
func (e *speedEnum) HandleSplitRequest(int) error   { return nil }
func (e *speedEnum) Snapshot(int64) ([]byte, error) { return nil, nil }
func (e *speedEnum) Close() error                   { return nil }

type speedReader struct {
	src              speedSplits
	splits           []string
	noMore           bool
	slowNext, fastNx int64
	slowMax          int64
	paused           map[string]bool
	slowOut, fastOut source.SplitOutput[int64]
}

func (r *speedReader) Start() error                          { return nil }
func (r *speedReader) AddSplits(s []string)                  { r.splits = append(r.splits, s...) }
func (r *speedReader) NoMoreSplits()                         { r.noMore = true }
func (r *speedReader) SnapshotState(int64) ([]string, error) { return nil, nil }
func (r *speedReader) NotifyCheckpointComplete(int64) error  { return nil }
func (r *speedReader) Close() error                          { return nil }
func (r *speedReader) PauseOrResumeSplits(pause, resume []string) {
	for _, id := range pause {
		r.paused[id] = true
	}
	for _, id := range resume {
		delete(r.paused, id)
	}
}

func (r *speedReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if !r.noMore || len(r.splits) < 2 {
		return source.NothingAvailable, nil, time.Millisecond, nil
	}
	if r.slowOut == nil {
		r.slowOut, r.fastOut = out.ForSplit("slow"), out.ForSplit("fast")
	}
	n := r.src.n
	for k := 0; k < 8 && r.slowNext < n && !r.paused["slow"]; k++ {
		r.slowMax = r.slowNext
		r.slowOut.CollectWithTimestamp(r.slowNext, r.slowNext)
		if r.slowNext++; r.slowNext == n {
			out.ReleaseSplit("slow")
		}
	}
	for k := 0; k < 8 && r.fastNx < n && !r.paused["fast"]; k++ {
		ts := r.fastNx * 10
		if r.slowNext < n && ts-r.slowMax > r.src.lead.Load() {
			r.src.lead.Store(ts - r.slowMax)
		}
		r.fastOut.CollectWithTimestamp(-ts-1, ts)
		if r.fastNx++; r.fastNx == n {
			out.ReleaseSplit("fast")
		}
	}
	if r.slowNext == n && r.fastNx == n {
		return source.EndOfInput, nil, 0, nil
	}
	return source.NothingAvailable, nil, time.Millisecond, nil
}

// Split-level alignment: one source whose reader holds a slow and a fast
// split. With alignment the fast split is paused whenever its watermark
// is beyond the source's (the slow split's) + maxDrift, so it never leads
// by more than maxDrift + one poll's worth (8 records of 10 ms); both
// splits finish with all records. Without alignment it leads by far.
func TestWatermarkAlignmentPausesFastSplit(t *testing.T) {
	const n = 500
	const maxDrift = 100 * time.Millisecond
	bound := maxDrift.Milliseconds() + 8*10
	run := func(align bool) (int64, int, int) {
		var lead atomic.Int64
		lead.Store(-1 << 62)
		env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond})
		ws := weir.WatermarkStrategy[int64]{Generator: weir.PunctuatedWatermarks[int64](0)}
		if align {
			ws = ws.WithWatermarkAlignment("splits", maxDrift, 10*time.Millisecond)
		}
		s := weir.FromSourceWithWatermarks[int64, string](env, speedSplits{n: n, lead: &lead}, ws, "speeds")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		got, err := weir.ExecuteAndCollect(ctx, env, s, "split-alignment")
		if err != nil {
			t.Fatal(err)
		}
		slow, fast := 0, 0
		for _, v := range got {
			if v < 0 {
				fast++
			} else {
				slow++
			}
		}
		return lead.Load(), slow, fast
	}
	lead, slow, fast := run(true)
	if slow != n || fast != n {
		t.Fatalf("aligned: %d slow and %d fast records, want %d each", slow, fast, n)
	}
	if lead > bound {
		t.Errorf("aligned: the fast split led the slow one by %d ms, beyond max drift + one poll (%d ms)", lead, bound)
	}
	t.Logf("aligned: largest lead %d ms (bound %d)", lead, bound)
	lead, slow, fast = run(false)
	if slow != n || fast != n {
		t.Fatalf("control: %d slow and %d fast records, want %d each", slow, fast, n)
	}
	if lead <= 5*bound {
		t.Errorf("control without alignment: largest lead %d ms, not far beyond %d ms; the test proves nothing", lead, bound)
	}
	t.Logf("control: largest lead %d ms", lead)
}

// tickSource is unbounded with one split "s" per reader: with emit, each
// poll emits 10 records of timestamps 10 ms apart; without, its reader
// makes the split's output (so it is not idle) and never emits. polls
// counts the reader's polls.
type tickSource struct {
	emit  bool
	polls *atomic.Int64
}

func (tickSource) Boundedness() source.Boundedness { return source.Unbounded }
func (tickSource) SplitCodec() codec.Codec[string] { return codec.String() }
func (tickSource) CreateEnumerator(ctx source.EnumeratorContext[string], _ []byte) (source.Enumerator[string], error) {
	return &tickEnum{ctx}, nil
}
func (s tickSource) CreateReader(source.ReaderContext) (source.Reader[int64, string], error) {
	return &tickReader{src: s}, nil
}

type tickEnum struct {
	ctx source.EnumeratorContext[string]
}

func (e *tickEnum) Start() error                   { return nil }
func (e *tickEnum) AddReader(subtask int) error    { e.ctx.Assign(subtask, "s"); return nil }
func (e *tickEnum) HandleSplitRequest(int) error   { return nil }
func (e *tickEnum) Snapshot(int64) ([]byte, error) { return nil, nil }
func (e *tickEnum) Close() error                   { return nil }

type tickReader struct {
	src   tickSource
	split bool
	out   source.SplitOutput[int64]
	next  int64
}

func (r *tickReader) Start() error                          { return nil }
func (r *tickReader) AddSplits(s []string)                  { r.split = r.split || len(s) > 0 }
func (r *tickReader) NoMoreSplits()                         {}
func (r *tickReader) SnapshotState(int64) ([]string, error) { return []string{"s"}, nil }
func (r *tickReader) NotifyCheckpointComplete(int64) error  { return nil }
func (r *tickReader) Close() error                          { return nil }
func (r *tickReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	r.src.polls.Add(1)
	if !r.split {
		return source.NothingAvailable, nil, 5 * time.Millisecond, nil
	}
	if r.out == nil {
		r.out = out.ForSplit("s")
	}
	if !r.src.emit {
		return source.NothingAvailable, nil, 5 * time.Millisecond, nil
	}
	for range 10 {
		r.out.CollectWithTimestamp(r.next, r.next*10)
		r.next++
	}
	return source.MoreAvailable, nil, 0, nil
}

// A source held back by its group waits without polling its reader, and
// its task goes on with checkpoints and cancellation: the group's other
// source never emits (and is not idle), so the fast one stops at max drift
// for good. Checkpoints still complete, the fast reader is not polled
// while it waits (the task wakes for the group's answers and timers only),
// and canceling the job ends it promptly.
func TestAlignedSourceWaitsAndStaysResponsive(t *testing.T) {
	var fastPolls, stuckPolls, checkpoints atomic.Int64
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond,
		Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
		OnCheckpoint:  func(int64, bool) { checkpoints.Add(1) }})
	ws := weir.WatermarkStrategy[int64]{Generator: weir.PunctuatedWatermarks[int64](0)}.
		WithWatermarkAlignment("g", 100*time.Millisecond, 10*time.Millisecond)
	fast := weir.FromSourceWithWatermarks[int64, string](env, tickSource{emit: true, polls: &fastPolls}, ws, "fast")
	stuck := weir.FromSourceWithWatermarks[int64, string](env, tickSource{polls: &stuckPolls}, ws, "stuck")
	var got atomic.Int64
	weir.Discard(weir.Map(weir.Union(fast, stuck), func(v int64) int64 { got.Add(1); return v }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := env.ExecuteAsync(ctx, "aligned-wait")
	if err != nil {
		t.Fatal(err)
	}
	// Until the fast source has emitted and stopped (not a fixed time: a
	// loaded machine may take longer to start the job).
	for deadline, last := time.Now().Add(20*time.Second), int64(-1); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := got.Load()
		if n > 0 && n == last {
			break
		}
		last = n
	}
	polls, cps, records := fastPolls.Load(), checkpoints.Load(), got.Load()
	time.Sleep(300 * time.Millisecond)
	if p := fastPolls.Load(); p != polls {
		t.Errorf("the fast reader was polled %d times while its source waited for the group", p-polls)
	}
	if n := got.Load(); n != records || n == 0 || n > 100 {
		t.Errorf("%d records, then %d: the fast source should have stopped after a few (within max drift), and stayed stopped", records, n)
	}
	if c := checkpoints.Load(); c <= cps {
		t.Errorf("no checkpoint completed while the source waited (%d before, %d after)", cps, c)
	}
	cancel()
	select {
	case <-j.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the job did not end within 5 s of its cancellation")
	}
}
