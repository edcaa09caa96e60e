package weir_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// twoSplitSource has two splits, "a" and "b", each of n records with
// timestamps 0..n-1, read by one reader: all of a first, then a pause (so
// periodic watermarks go out), then all of b. Across splits the records
// are out of order by up to n ms; within a split they are in order.
type twoSplitSource struct{ n int64 }

func (twoSplitSource) Boundedness() source.Boundedness { return source.Bounded }
func (twoSplitSource) SplitCodec() codec.Codec[string] {
	c, _ := codec.For[string]()
	return c
}
func (twoSplitSource) CreateEnumerator(ctx source.EnumeratorContext[string], _ []byte) (source.Enumerator[string], error) {
	return &twoSplitEnum{ctx: ctx}, nil
}
func (s twoSplitSource) CreateReader(ctx source.ReaderContext) (source.Reader[int64, string], error) {
	return &twoSplitReader{n: s.n, clk: ctx.Clock()}, nil
}

type twoSplitEnum struct {
	ctx source.EnumeratorContext[string]
}

func (e *twoSplitEnum) Start() error { return nil }
func (e *twoSplitEnum) AddReader(subtask int) error {
	e.ctx.Assign(subtask, "a", "b")
	e.ctx.NoMoreSplits(subtask)
	return nil
}
func (e *twoSplitEnum) HandleSplitRequest(int) error   { return nil }
func (e *twoSplitEnum) Snapshot(int64) ([]byte, error) { return nil, nil }
func (e *twoSplitEnum) Close() error                   { return nil }

type twoSplitReader struct {
	n      int64
	clk    clock.Clock
	splits []string
	noMore bool
	phase  int
	until  time.Time
	outs   []source.SplitOutput[int64]
}

func (r *twoSplitReader) Start() error                         { return nil }
func (r *twoSplitReader) AddSplits(s []string)                 { r.splits = append(r.splits, s...) }
func (r *twoSplitReader) NoMoreSplits()                        { r.noMore = true }
func (r *twoSplitReader) NotifyCheckpointComplete(int64) error { return nil }
func (r *twoSplitReader) Close() error                         { return nil }
func (r *twoSplitReader) SnapshotState(int64) ([]string, error) {
	return nil, nil // the test runs without checkpoints
}

func (r *twoSplitReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if !r.noMore || len(r.splits) < 2 {
		return source.NothingAvailable, nil, 5 * time.Millisecond, nil
	}
	if r.outs == nil {
		// Outputs for every split before any record: a split without
		// one does not hold the watermark back.
		for _, s := range r.splits {
			r.outs = append(r.outs, out.ForSplit(s))
		}
	}
	switch r.phase {
	case 0, 2:
		so := r.outs[r.phase/2]
		for ts := range r.n {
			so.CollectWithTimestamp(ts, ts)
		}
		r.phase++
		r.until = r.clk.Now().Add(150 * time.Millisecond)
		return source.NothingAvailable, nil, 150 * time.Millisecond, nil
	case 1:
		if r.clk.Now().Before(r.until) {
			return source.NothingAvailable, nil, time.Until(r.until), nil
		}
		r.phase++
		return source.MoreAvailable, nil, 0, nil
	}
	out.ReleaseSplit("a")
	out.ReleaseSplit("b")
	return source.EndOfInput, nil, 0, nil
}

// windowCounts runs tumbling 100ms windows counting records over s.
func windowCounts(t *testing.T, env *weir.Environment, s weir.DataStream[int64]) []string {
	t.Helper()
	ws := weir.Window(weir.KeyBy(s, func(int64) string { return "k" }), weir.TumblingEventTimeWindows(100*time.Millisecond))
	res := weir.Collect(weir.WindowProcess(ws, weir.ProcessWindowFunc[string, int64, string](func(ctx weir.WindowContext[string], els []int64, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%v n=%d", ctx.Window(), len(els)))
		return nil
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "splits")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for v := range res.All() {
		got = append(got, v)
	}
	if _, err := job.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// Per-split watermarks: split b, read after split a has gone far ahead in
// event time, is not late, because the source's watermark is the minimum
// over its splits. The reference counts every record per window directly.
func TestPerSplitWatermarksKeepLaggingSplitOnTime(t *testing.T) {
	const n = 500
	var want []string
	for start := int64(0); start < n; start += 100 {
		c := 0
		for range 2 { // splits a and b
			for ts := int64(0); ts < n; ts++ {
				if ts >= start && ts < start+100 {
					c++
				}
			}
		}
		want = append(want, fmt.Sprintf("[%d, %d) n=%d", start, start+100, c))
	}
	slices.Sort(want)

	env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond})
	s := weir.FromSourceWithWatermarks[int64, string](env, twoSplitSource{n}, weir.WatermarkStrategy[int64]{}, "two splits")
	if got := windowCounts(t, env, s); !slices.Equal(got, want) {
		t.Errorf("per-split watermarks: got %q, want %q", got, want)
	}

	// The control: one generator after the source makes b's records late.
	env = weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond})
	s = weir.AssignTimestampsAndWatermarks(weir.FromSource[int64, string](env, twoSplitSource{n}, "two splits"),
		weir.WatermarkStrategy[int64]{Timestamp: func(v int64) int64 { return v }})
	if got := windowCounts(t, env, s); slices.Equal(got, want) {
		t.Errorf("one generator over both splits: got the per-split result %q; the test proves nothing", got)
	}
}

// pairSource has splits "a" and "b" (one reader), each of n records (n
// even) in pairs, low then high: split a's pair k has timestamps 20k-300
// and 20k+10, split b's 8k-300 and 8k+10. A poll emits whole pairs, so a
// checkpointed position is always at a pair's start, and the first record
// after a restore is a low one: a split's generator that started again
// from nothing would emit a watermark far below the split's checkpointed
// one. A record is split*n + index. The readers' positions at each
// checkpoint go to positions. At parallelism 1 the reader gets both
// splits, at 2 each reader one.
type pairSource struct {
	n         int64
	positions *sync.Map // "checkpoint id/split" -> int64
}

func pairTS(split string, i int64) int64 {
	step := int64(20)
	if split == "b" {
		step = 8
	}
	if i%2 == 0 {
		return step*(i/2) - 300
	}
	return step*(i/2) + 10
}

func (pairSource) Boundedness() source.Boundedness { return source.Bounded }
func (pairSource) SplitCodec() codec.Codec[string] { return codec.String() }
func (pairSource) CreateEnumerator(ctx source.EnumeratorContext[string], restored []byte) (source.Enumerator[string], error) {
	return &pairEnum{ctx: ctx, assigned: restored != nil}, nil
}
func (s pairSource) CreateReader(ctx source.ReaderContext) (source.Reader[int64, string], error) {
	return &pairReader{src: s, next: map[string]int64{}, outs: map[string]source.SplitOutput[int64]{}}, nil
}

type pairEnum struct {
	ctx      source.EnumeratorContext[string]
	assigned bool
}

func (e *pairEnum) Start() error { return nil }
func (e *pairEnum) AddReader(subtask int) error {
	if !e.assigned {
		switch {
		case e.ctx.Parallelism() == 1:
			e.assigned = true
			e.ctx.Assign(subtask, "a:0", "b:0")
		case subtask < 2:
			e.assigned = len(e.ctx.Registered()) == 2
			e.ctx.Assign(subtask, []string{"a:0", "b:0"}[subtask])
		}
	}
	e.ctx.NoMoreSplits(subtask)
	return nil
}
func (e *pairEnum) HandleSplitRequest(int) error   { return nil }
func (e *pairEnum) Snapshot(int64) ([]byte, error) { return []byte{1}, nil }
func (e *pairEnum) Close() error                   { return nil }

type pairReader struct {
	src    pairSource
	order  []string
	next   map[string]int64
	outs   map[string]source.SplitOutput[int64]
	noMore bool
}

func (r *pairReader) Start() error { return nil }
func (r *pairReader) AddSplits(splits []string) {
	for _, s := range splits {
		id, pos, _ := strings.Cut(s, ":")
		r.next[id], _ = strconv.ParseInt(pos, 10, 64)
		r.order = append(r.order, id)
	}
}
func (r *pairReader) NoMoreSplits()                        { r.noMore = true }
func (r *pairReader) NotifyCheckpointComplete(int64) error { return nil }
func (r *pairReader) Close() error                         { return nil }
func (r *pairReader) SnapshotState(id int64) ([]string, error) {
	var out []string
	for _, s := range r.order {
		out = append(out, fmt.Sprintf("%s:%d", s, r.next[s]))
		r.src.positions.Store(fmt.Sprintf("%d/%s", id, s), r.next[s])
	}
	return out, nil
}

func (r *pairReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if !r.noMore {
		return source.NothingAvailable, nil, time.Millisecond, nil
	}
	for _, s := range r.order {
		if r.outs[s] == nil {
			r.outs[s] = out.ForSplit(s)
		}
	}
	live := r.order[:0]
	for _, s := range r.order {
		base := int64(0)
		if s == "b" {
			base = r.src.n
		}
		for range 4 { // two pairs
			i := r.next[s]
			r.outs[s].CollectWithTimestamp(base+i, pairTS(s, i))
			r.next[s]++
		}
		if r.next[s] < r.src.n {
			live = append(live, s)
		} else {
			out.ReleaseSplit(s)
		}
	}
	r.order = live
	if len(r.order) == 0 {
		return source.EndOfInput, nil, 0, nil
	}
	return source.NothingAvailable, nil, time.Millisecond, nil
}

// bothStarted reports whether checkpoint id found both splits of a
// pairSource started.
func bothStarted(positions *sync.Map, id int64) bool {
	for _, s := range []string{"a", "b"} {
		if p, ok := positions.Load(fmt.Sprintf("%d/%s", id, s)); !ok || p.(int64) == 0 {
			return false
		}
	}
	return true
}

// pairWatermarkAt is the reference: the watermark a pairSource had at
// checkpoint id with punctuated watermarks of the given delay, the minimum
// over its splits of the highest timestamp before the checkpointed
// position, minus the delay, minus 1.
func pairWatermarkAt(positions *sync.Map, id, delay int64) (int64, map[string]int64) {
	want, p := int64(math.MaxInt64), map[string]int64{}
	for _, s := range []string{"a", "b"} {
		v, _ := positions.Load(fmt.Sprintf("%d/%s", id, s))
		pos := v.(int64)
		p[s] = pos
		hi := int64(math.MinInt64)
		for i := range pos {
			hi = max(hi, pairTS(s, i))
		}
		want = min(want, hi-delay-1)
	}
	return want, p
}

// wmSeen is a record reaching the operator after the source, whether the
// job had restarted then, and the operator's watermark.
type wmSeen struct {
	v, wm     int64
	restarted bool
}

// A watermarked source's split watermarks are in its checkpoints: after an
// injected failure and a restore, no watermark reaching downstream is below
// the one the source had at the restored checkpoint (the minimum over its
// live splits of each split's highest timestamp before its checkpointed
// position, minus the out-of-orderness, minus 1: the punctuated generator's
// watermark, computed here from the positions the reader checkpointed).
// Every record arrives at least once.
func TestSplitWatermarksSurviveRestore(t *testing.T) {
	const n = 400
	const delay = 400
	positions := &sync.Map{}
	var restarted, failed atomic.Bool
	var armed, restoredFrom atomic.Int64
	env := weir.NewEnvironment(weir.Config{
		Parallelism:   1,
		Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: t.TempDir()},
		Restart: map[string]string{"restart-strategy.type": "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "2", "restart-strategy.fixed-delay.delay": "10ms"},
		OnCheckpoint: func(id int64, _ bool) {
			// Fail after a checkpoint that found both splits started.
			if bothStarted(positions, id) && armed.Load() == 0 {
				armed.Store(id)
			}
		},
		OnRestart: func(_ int, cp int64, _ error) { restoredFrom.Store(cp); restarted.Store(true) },
	})
	s := weir.FromSourceWithWatermarks[int64, string](env, pairSource{n: n, positions: positions},
		weir.WatermarkStrategy[int64]{Generator: weir.PunctuatedWatermarks[int64](delay * time.Millisecond)}, "pairs")
	s = weir.Map(s, func(v int64) int64 {
		if armed.Load() > 0 && failed.CompareAndSwap(false, true) {
			panic(errors.New("injected failure"))
		}
		return v
	})
	var mu sync.Mutex
	var seenWM []wmSeen
	log := weir.KeyedProcessFunc[int64, int64, int64](func(ctx weir.KeyedContext[int64], v int64, out weir.Collector[int64]) error {
		mu.Lock()
		seenWM = append(seenWM, wmSeen{v, ctx.TimerService().CurrentWatermark(), restarted.Load()})
		mu.Unlock()
		out.Collect(v)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := weir.ExecuteAndCollect(ctx, env,
		weir.ProcessKeyed[int64, int64, int64](weir.KeyBy(s, func(int64) int64 { return 0 }), log), "split-watermarks-restore")
	if err != nil {
		t.Fatal(err)
	}
	cp := restoredFrom.Load()
	if !failed.Load() || !bothStarted(positions, cp) {
		t.Fatalf("the job did not fail and restore from a checkpoint with both splits started (failed %v, restored from %d)", failed.Load(), cp)
	}
	want, p := pairWatermarkAt(positions, cp, delay)
	after := 0
	for _, o := range seenWM {
		if o.restarted && o.wm != math.MinInt64 {
			after++
			if o.wm < want {
				t.Fatalf("after the restore from checkpoint %d (positions %v), record %d saw watermark %d, below the source's %d at the checkpoint", cp, p, o.v, o.wm, want)
			}
		}
	}
	if after == 0 {
		t.Fatalf("none of the %d records reaching downstream after the restore saw a watermark; the test proves nothing", len(seenWM))
	}
	seen := map[int64]bool{}
	for _, v := range got {
		seen[v] = true
	}
	if len(seen) != 2*n {
		t.Errorf("%d distinct records, want %d", len(seen), 2*n)
	}
}

// Split watermarks follow their splits through a rescale: a job at source
// parallelism 2 (a reader per split) is canceled after a checkpoint with
// both splits started; a job at parallelism 1 resumes from it, its one
// reader gets both splits, and no watermark reaching downstream is below
// the source's at the checkpoint (each split restarts with a record far
// below its previous watermark).
func TestSplitWatermarksSurviveRescale(t *testing.T) {
	const n = 400
	const delay = 400
	dir := t.TempDir()
	positions := &sync.Map{}
	var armed atomic.Int64
	var mu sync.Mutex
	var seenWM []int64
	build := func(p int, resume string) (*weir.Job, context.CancelFunc) {
		env := weir.NewEnvironment(weir.Config{
			Parallelism: 1, ResumeFrom: resume,
			Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: dir, Retained: 1},
			OnCheckpoint: func(id int64, _ bool) {
				if bothStarted(positions, id) && armed.Load() == 0 {
					armed.Store(id)
				}
			},
		})
		s := weir.FromSourceWithWatermarks[int64, string](env, pairSource{n: n, positions: positions},
			weir.WatermarkStrategy[int64]{Generator: weir.PunctuatedWatermarks[int64](delay * time.Millisecond)}, "pairs").
			UID("pairs").SetParallelism(p)
		weir.Discard(weir.ProcessKeyed[int64, int64, int64](weir.KeyBy(s, func(int64) int64 { return 0 }),
			weir.KeyedProcessFunc[int64, int64, int64](func(ctx weir.KeyedContext[int64], v int64, out weir.Collector[int64]) error {
				mu.Lock()
				seenWM = append(seenWM, ctx.TimerService().CurrentWatermark())
				mu.Unlock()
				return nil
			})).UID("observe"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		j, err := env.ExecuteAsync(ctx, "split-watermarks-rescale")
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return j, cancel
	}
	j, cancel := build(2, "")
	for armed.Load() == 0 {
		select {
		case <-j.Done():
			cancel()
			t.Fatal("the first job ended before a checkpoint found both splits started")
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	<-j.Done()
	mu.Lock()
	seenWM = nil
	mu.Unlock()
	j2, cancel2 := build(1, "latest")
	defer cancel2()
	if _, err := j2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cp int64
	if _, err := fmt.Sscanf(j2.RestoredFrom(), "checkpoint %d of", &cp); err != nil || !bothStarted(positions, cp) {
		t.Fatalf("the second job restored %q (%v): not a checkpoint with both splits started", j2.RestoredFrom(), err)
	}
	want, p := pairWatermarkAt(positions, cp, delay)
	after := 0
	for _, wm := range seenWM {
		if wm == math.MinInt64 {
			continue
		}
		after++
		if wm < want {
			t.Fatalf("after resuming from checkpoint %d (positions %v) at parallelism 1, a record saw watermark %d, below the source's %d at the checkpoint", cp, p, wm, want)
		}
	}
	if after == 0 {
		t.Fatalf("none of the %d records of the resumed job saw a watermark; the test proves nothing", len(seenWM))
	}
}
