package weir_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirhq/weir"
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
