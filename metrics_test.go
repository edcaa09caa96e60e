package weir_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// scriptSource emits script at parallelism 1 in order, with pauses of
// pause after the elements at the indexes in pauses, then stays open
// without ending (the job keeps running for REST). Timestamps and
// watermarks (punctuated, delay 0: the maximum timestamp so far - 1) are
// assigned at parallelism 1 too, so every downstream subtask sees the
// script's order and watermarks.
func scriptSource(env *weir.Environment, script []int64, pause time.Duration, pauses []int, ts func(int64) int64) weir.DataStream[int64] {
	src := weir.FromSource[int64, string](env, scriptSrc{script: script, pause: pause, pauses: pauses}, "Script").SetParallelism(1)
	return weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[int64]{
		Timestamp: ts, Generator: weir.PunctuatedWatermarks[int64](0)}).SetParallelism(1)
}

type scriptSrc struct {
	script []int64
	pause  time.Duration
	pauses []int
}

func (scriptSrc) Boundedness() source.Boundedness { return source.Unbounded }
func (scriptSrc) SplitCodec() codec.Codec[string] {
	c, _ := codec.For[string]()
	return c
}
func (scriptSrc) CreateEnumerator(ctx source.EnumeratorContext[string], _ []byte) (source.Enumerator[string], error) {
	return &twoSplitEnum{ctx: ctx}, nil // hands out splits nobody reads
}
func (s scriptSrc) CreateReader(ctx source.ReaderContext) (source.Reader[int64, string], error) {
	return &scriptReader{s: s, clk: ctx.Clock()}, nil
}

type scriptReader struct {
	s     scriptSrc
	clk   clock.Clock
	next  int
	until time.Time
}

func (r *scriptReader) Start() error                          { return nil }
func (r *scriptReader) AddSplits([]string)                    {}
func (r *scriptReader) NoMoreSplits()                         {}
func (r *scriptReader) NotifyCheckpointComplete(int64) error  { return nil }
func (r *scriptReader) Close() error                          { return nil }
func (r *scriptReader) SnapshotState(int64) ([]string, error) { return nil, nil }

func (r *scriptReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if now := r.clk.Now(); now.Before(r.until) {
		return source.NothingAvailable, nil, r.until.Sub(now), nil
	}
	for r.next < len(r.s.script) {
		out.Collect(r.s.script[r.next])
		r.next++
		if slices.Contains(r.s.pauses, r.next-1) {
			r.until = r.clk.Now().Add(r.s.pause)
			return source.MoreAvailable, nil, 0, nil
		}
		if out.ShouldYield() {
			return source.MoreAvailable, nil, 0, nil
		}
	}
	return source.NothingAvailable, nil, time.Second, nil
}

// vertexNamed finds the vertex whose name contains name.
func vertexNamed(t *testing.T, c *rest.Client, jobID, name string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := c.Job(context.Background(), jobID)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Vertices {
			if strings.Contains(v.Name, name) {
				return v.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no vertex named %q in %+v", name, d.Vertices)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sumWhenIn polls the vertex's aggregated metrics until the sum of
// numRecordsIn over its subtasks is in records, then returns the sum of
// metric (the counters of a subtask are published together, so once every
// record is counted in, what it did with them is counted too).
func sumWhenIn(t *testing.T, c *rest.Client, jobID, vid string, records int64, metric string) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, err := c.AggregatedMetrics(context.Background(), jobID, vid, "numRecordsIn", metric)
		if err != nil {
			t.Fatal(err)
		}
		var in, m *rest.AggregatedMetric
		for i := range ms {
			switch ms[i].ID {
			case "numRecordsIn":
				in = &ms[i]
			case metric:
				m = &ms[i]
			}
		}
		if in != nil && int64(*in.Sum) > records {
			t.Fatalf("%d records in, more than the %d sent: %s", int64(*in.Sum), records, showAgg(ms))
		}
		if in != nil && int64(*in.Sum) == records {
			if m == nil {
				t.Fatalf("no %s among %+v", metric, ms)
			}
			return int64(*m.Sum)
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %d records in: %s", records, showAgg(ms))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A window job drops late elements (no late side output): REST reports
// exactly as many in Window(Reduce).numLateRecordsDropped as a reference
// replay of the script counts, on the vertex ("<subtask>.<operator>.<name>"),
// per subtask and aggregated, next to the task's own metrics.
func TestRESTNumLateRecordsDroppedWindow(t *testing.T) {
	rng := testseed.Rand(t, 1)
	const n, size, lateness = 3000, 100, 20
	// v = ts*10 + key; mostly ascending timestamps, every tenth element
	// up to 400 ms back.
	script := make([]int64, n)
	cur := int64(1000)
	for i := range script {
		cur += rng.Int64N(6)
		ts := cur
		if rng.IntN(10) == 0 {
			ts = max(0, cur-rng.Int64N(400))
		}
		script[i] = ts*10 + rng.Int64N(5)
	}
	// Reference: an element is dropped when its window's max timestamp plus
	// the lateness is at or below the watermark before it.
	want := int64(0)
	wm := int64(math.MinInt64)
	for _, v := range script {
		ts := v / 10
		if end := ts - ts%size + size; end-1+lateness <= wm {
			want++
		}
		wm = max(wm, ts-1)
	}
	if want == 0 {
		t.Fatal("the script has no late element; the test would prove nothing")
	}
	t.Logf("%d of %d elements are late", want, n)

	// The window operator's other paths count alike: the general operator
	// (forced; the default is the sliced one) and its trigger path (a
	// trigger it does not recognize as the default).
	for name, path := range map[string]func(weir.WindowedStream[int64, int64]) weir.WindowedStream[int64, int64]{
		"general": func(ws weir.WindowedStream[int64, int64]) weir.WindowedStream[int64, int64] { return ws },
		"trigger": func(ws weir.WindowedStream[int64, int64]) weir.WindowedStream[int64, int64] {
			return ws.Trigger(opaqueTrigger{weir.EventTimeTrigger[int64]()})
		},
	} {
		restore := weir.ForceGeneralWindowOp(true)
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
		s := scriptSource(env, script, 0, nil, func(v int64) int64 { return v / 10 })
		ws := weir.Window(weir.KeyBy(s, func(v int64) int64 { return v % 10 }), weir.TumblingEventTimeWindows(size*time.Millisecond)).
			AllowedLateness(lateness * time.Millisecond)
		weir.Discard(weir.WindowReduce(path(ws), func(a, b int64) int64 { return a + b }))
		restore()
		job, err := env.ExecuteAsync(context.Background(), "late-"+name)
		if err != nil {
			t.Fatal(err)
		}
		c := rest.NewClient(job.RESTAddr(), nil)
		vid := vertexNamed(t, c, job.ID(), "Window(Reduce)")
		got := sumWhenIn(t, c, job.ID(), vid, n, "Window(Reduce).numLateRecordsDropped")
		job.Cancel()
		job.Wait(context.Background())
		if got != want {
			t.Fatalf("%s: aggregated numLateRecordsDropped = %d, want %d", name, got, want)
		}
	}

	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	s := scriptSource(env, script, 0, nil, func(v int64) int64 { return v / 10 })
	ws := weir.Window(weir.KeyBy(s, func(v int64) int64 { return v % 10 }), weir.TumblingEventTimeWindows(size*time.Millisecond)).
		AllowedLateness(lateness * time.Millisecond)
	weir.Discard(weir.WindowReduce(ws, func(a, b int64) int64 { return a + b }))
	job, err := env.ExecuteAsync(context.Background(), "late")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	c := rest.NewClient(job.RESTAddr(), nil)
	ctx := context.Background()
	vid := vertexNamed(t, c, job.ID(), "Window(Reduce)")
	const metric = "Window(Reduce).numLateRecordsDropped"
	if got := sumWhenIn(t, c, job.ID(), vid, n, metric); got != want {
		t.Fatalf("aggregated %s = %d, want %d", metric, got, want)
	}

	// The vertex lists "<subtask>.<name>" for both subtasks: the task's
	// metrics and the operator's.
	list, err := c.VertexMetrics(ctx, job.ID(), vid)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list {
		if m.Value != "" {
			t.Fatalf("a list entry has a value: %+v", m)
		}
		ids = append(ids, m.ID)
	}
	for sub := range 2 {
		for _, name := range []string{metric, "numRecordsIn", "numRecordsOut", "numBytesIn", "currentInputWatermark",
			"currentOutputWatermark", "accumulatedBusyTime", "accumulatedIdleTime", "accumulatedBackPressuredTime"} {
			if id := fmt.Sprintf("%d.%s", sub, name); !slices.Contains(ids, id) {
				t.Errorf("vertex metrics lack %q: %q", id, ids)
			}
		}
	}
	got, err := c.VertexMetrics(ctx, job.ID(), vid, "0."+metric, "1."+metric)
	if err != nil || len(got) != 2 {
		t.Fatalf("vertex metrics with get: %+v, %v", got, err)
	}
	sum := int64(0)
	for sub, m := range got {
		v, err := strconv.ParseInt(m.Value, 10, 64)
		if err != nil || m.ID != fmt.Sprintf("%d.%s", sub, metric) {
			t.Fatalf("vertex metric %+v", m)
		}
		sum += v
		// The same value per subtask, without the prefix.
		one, err := c.SubtaskMetrics(ctx, job.ID(), vid, sub, metric)
		if err != nil || len(one) != 1 || one[0] != (rest.Metric{ID: metric, Value: m.Value}) {
			t.Fatalf("subtask %d metrics: %+v, %v; vertex says %s", sub, one, err, m.Value)
		}
	}
	if sum != want {
		t.Fatalf("vertex %s sums to %d, want %d", metric, sum, want)
	}
}

// An interval join drops late elements of either side without a side
// output, and counts them (Flink's IntervalJoinOperator has the same
// numLateRecordsDropped); late left elements go to the side output here and
// are not counted. The script has an on-time phase, a pause (so both inputs
// have delivered its watermarks to the join, whichever way their channels
// interleave), then a phase whose elements are late iff their timestamp is
// below the watermark the first phase reached.
func TestRESTNumLateRecordsDroppedIntervalJoin(t *testing.T) {
	rng := testseed.Rand(t, 2)
	enc := func(ts, key, side int64) int64 { return (ts*10+key)*2 + side }
	var script []int64
	ts := int64(10_000)
	for range 400 {
		ts += rng.Int64N(5)
		script = append(script, enc(ts, rng.Int64N(5), rng.Int64N(2)))
	}
	wm := ts - 1 // punctuated, no delay
	pauseAt := len(script) - 1
	var lateLeft []int64
	lateRight := int64(0)
	for range 300 {
		t2 := wm - 300 + rng.Int64N(300+2) // up to ts: the watermark stays
		side := rng.Int64N(2)
		v := enc(t2, rng.Int64N(5), side)
		script = append(script, v)
		if t2 < wm { // Flink's isLate: strictly below the watermark
			if side == 0 {
				lateLeft = append(lateLeft, v)
			} else {
				lateRight++
			}
		}
	}
	records := int64(len(script))
	if len(lateLeft) == 0 || lateRight == 0 {
		t.Fatal("the script lacks late elements on a side; the test would prove nothing")
	}
	t.Logf("late: %d left (side output), %d right (dropped)", len(lateLeft), lateRight)

	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	s := scriptSource(env, script, time.Second, []int{pauseAt}, func(v int64) int64 { return v / 20 })
	key := func(v int64) int64 { return v / 2 % 10 }
	left := weir.KeyBy(weir.Filter(s, func(v int64) bool { return v%2 == 0 }).SetParallelism(1), key)
	right := weir.KeyBy(weir.Filter(s, func(v int64) bool { return v%2 == 1 }).SetParallelism(1), key)
	tag := weir.NewOutputTag[int64]("late-left")
	joined := weir.ProcessIntervalJoin(weir.IntervalJoin(left, right).Between(-50*time.Millisecond, 50*time.Millisecond).SideOutputLeftLateData(tag),
		weir.ProcessJoinFunc[int64, int64, int64](func(_ weir.ProcessJoinContext, a, b int64, out weir.Collector[int64]) error {
			out.Collect(a + b)
			return nil
		}))
	weir.Discard(joined)
	late := weir.Collect(weir.SideOutput(joined, tag))
	job, err := env.ExecuteAsync(context.Background(), "late-join")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	c := rest.NewClient(job.RESTAddr(), nil)
	vid := vertexNamed(t, c, job.ID(), "Interval-Join")
	if got := sumWhenIn(t, c, job.ID(), vid, records, "Interval-Join.numLateRecordsDropped"); got != lateRight {
		t.Fatalf("numLateRecordsDropped = %d, want %d (the late right elements)", got, lateRight)
	}
	var side []int64
	for v := range late.All() {
		side = append(side, v)
		if len(side) == len(lateLeft) {
			break
		}
	}
	slices.Sort(side)
	slices.Sort(lateLeft)
	if !slices.Equal(side, lateLeft) {
		t.Fatalf("late side output %v, want %v", side, lateLeft)
	}
}

func showAgg(ms []rest.AggregatedMetric) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s: min %v max %v sum %v; ", m.ID, *m.Min, *m.Max, *m.Sum)
	}
	return b.String()
}

// opaqueTrigger hides a trigger's type, so the window operator runs its
// trigger path.
type opaqueTrigger struct{ weir.Trigger[int64] }
