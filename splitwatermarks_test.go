package weir_test

import (
	"context"
	"fmt"
	"slices"
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
