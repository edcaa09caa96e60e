package weir_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
)

// idleJob: a generated source of parallelism 2 whose subtask 1 filters all
// its elements away (datagen interleaves: subtask 0 has the even numbers),
// timestamps i ms, tumbling windows of 100ms counting elements. Without
// idleness subtask 1's watermark stays at the minimum and no window fires.
func idleJob(idle time.Duration) (*weir.Environment, *weir.Collected[string]) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, AutoWatermarkInterval: 20 * time.Millisecond})
	src := weir.Filter(weir.Generate(env, -1, 20000, func(i int64) int64 { return i }), func(i int64) bool { return i%2 == 0 })
	ts := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[int64]{
		Timestamp: func(i int64) int64 { return i }, IdleTimeout: idle})
	ws := weir.Window(weir.KeyBy(ts, func(int64) string { return "k" }), weir.TumblingEventTimeWindows(100*time.Millisecond))
	res := weir.WindowProcess(ws, weir.ProcessWindowFunc[string, int64, string](func(ctx weir.WindowContext[string], els []int64, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%v n=%d", ctx.Window(), len(els)))
		return nil
	}))
	return env, weir.Collect(res)
}

// An idle source subtask does not hold back windows downstream: with
// IdleTimeout the windows fire, and each holds exactly the even numbers of
// its range (the reference, counted directly).
func TestIdleSubtaskDoesNotHoldBackWindows(t *testing.T) {
	env, out := idleJob(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for s := range out.All() {
		got = append(got, s)
		if len(got) == 3 {
			break
		}
	}
	job.Cancel()
	job.Wait(context.Background())
	if len(got) < 3 {
		t.Fatalf("only %d windows fired before the job ended: %q", len(got), got)
	}
	for k, g := range got {
		n := 0
		for i := int64(k * 100); i < int64(k+1)*100; i++ {
			if i%2 == 0 {
				n++
			}
		}
		if want := fmt.Sprintf("[%d, %d) n=%d", k*100, (k+1)*100, n); g != want {
			t.Errorf("window %d: got %q, want %q", k, g, want)
		}
	}
}

// The control: without idleness the same job fires no window, so the test
// above proves something.
func TestWithoutIdlenessWindowsAreHeldBack(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a second")
	}
	env, out := idleJob(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "not-idle")
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() { job.Cancel() })
	var got []string
	for s := range out.All() {
		got = append(got, s)
	}
	job.Wait(context.Background())
	if len(got) > 0 {
		t.Fatalf("windows fired although subtask 1 never sent a watermark: %q", got)
	}
}

// The watermarks endpoint shows which subtask's output is idle:
// currentOutputWatermarkStatus is IDLE for the source subtask whose
// elements are all filtered away (IdleTimeout), ACTIVE for the one that
// keeps emitting (the control in the same job), and the same on the
// vertex's metrics. Downstream, one active input channel keeps the window
// subtasks active.
func TestRESTShowsIdleSubtask(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, AutoWatermarkInterval: 20 * time.Millisecond, RESTAddr: "127.0.0.1:0"})
	src := weir.Filter(weir.Generate(env, -1, 2000, func(i int64) int64 { return i }), func(i int64) bool { return i%2 == 0 })
	ts := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[int64]{
		Timestamp: func(i int64) int64 { return i }, IdleTimeout: 50 * time.Millisecond})
	ws := weir.Window(weir.KeyBy(ts, func(i int64) int64 { return i % 4 }), weir.TumblingEventTimeWindows(100*time.Millisecond))
	weir.Discard(weir.WindowReduce(ws, func(a, b int64) int64 { return a + b }))
	job, err := env.ExecuteAsync(context.Background(), "idle-rest")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	c := rest.NewClient(job.RESTAddr(), nil)
	ctx := context.Background()
	srcID := vertexNamed(t, c, job.ID(), "Timestamps/Watermarks")
	winID := vertexNamed(t, c, job.ID(), "Window(Reduce)")
	status := func(ms []rest.Metric) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			if strings.HasSuffix(m.ID, ".currentOutputWatermarkStatus") {
				out[m.ID] = m.Value
			}
		}
		return out
	}
	want := map[string]string{"0.currentOutputWatermarkStatus": "ACTIVE", "1.currentOutputWatermarkStatus": "IDLE"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		wms, err := c.Watermarks(ctx, job.ID(), srcID)
		if err != nil {
			t.Fatal(err)
		}
		if got := status(wms); maps.Equal(got, want) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("source statuses %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ms, err := c.VertexMetrics(ctx, job.ID(), srcID, "0.currentOutputWatermarkStatus", "1.currentOutputWatermarkStatus")
	if err != nil {
		t.Fatal(err)
	}
	if got := status(ms); !maps.Equal(got, want) {
		t.Fatalf("vertex metrics say %v, want %v", got, want)
	}
	wms, err := c.Watermarks(ctx, job.ID(), winID)
	if err != nil {
		t.Fatal(err)
	}
	if got := status(wms); !maps.Equal(got, map[string]string{"0.currentOutputWatermarkStatus": "ACTIVE", "1.currentOutputWatermarkStatus": "ACTIVE"}) {
		t.Fatalf("window statuses %v: an active input channel keeps them active", got)
	}
}
