package nexmark_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// TestSourceInJob runs the source on the embedded cluster at parallelism 1
// and 3, through a network exchange (so events go through their codec),
// and compares the collected events with the generator's stream. At
// parallelism 3 the exchange uses EventCodec.
func TestSourceInJob(t *testing.T) {
	cfg := nexmark.DefaultConfig()
	cfg.Events = 5003
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, cfg.Events)
	var e nexmark.Event
	for n := range cfg.Events {
		g.Event(n, &e)
		want[n] = string(nexmark.AppendJSON(nil, &e))
	}
	slices.Sort(want)
	for _, p := range []int{1, 3} {
		env := weir.NewEnvironment(weir.Config{Parallelism: p})
		events := weir.FromSource[nexmark.Event, nexmark.Split](env, nexmark.Source{Config: cfg}, "nexmark")
		if p > 1 {
			// The exchange with Nexmark's own codec instead of the derived one.
			events = events.WithCodec(nexmark.EventCodec())
		}
		events = events.Rebalance()
		out := weir.Collect(weir.Map(events, func(e nexmark.Event) string { return string(nexmark.AppendJSON(nil, &e)) }))
		job, err := env.ExecuteAsync(context.Background(), "nexmark-source")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for s := range out.All() {
			got = append(got, s)
		}
		if _, err := job.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("parallelism %d: %d events, want the %d of the stream", p, len(got), len(want))
		}
	}
}

// typeCount is one event counted under its type.
type typeCount struct {
	Type string
	N    int64
}

// TestSourceWindows counts events per type in 10 s tumbling event-time
// windows, with the queries' watermark (dateTime - 4 s) on the source, at
// parallelism 1 and 3 and with out-of-order groups: the strided splits
// advance together in event time, so no event is late and every window
// holds exactly the events whose dateTime falls in it.
func TestSourceWindows(t *testing.T) {
	cfg := nexmark.DefaultConfig()
	cfg.Events, cfg.EventsPerSecond, cfg.OutOfOrderGroupSize = 45_017, 1000, 17
	cfg.BaseTime = 1_767_225_595_000 // 5 s before a day (and hour) boundary
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	var e nexmark.Event
	for n := range cfg.Events {
		g.Event(n, &e)
		start := e.DateTime() - e.DateTime()%10_000
		want[fmt.Sprintf("%v %d", e.Type, start)]++
	}
	for _, p := range []int{1, 3} {
		env := weir.NewEnvironment(weir.Config{Parallelism: p})
		ws := weir.WatermarkStrategy[nexmark.Event]{
			Timestamp:         func(e nexmark.Event) int64 { return e.DateTime() },
			MaxOutOfOrderness: 4 * time.Second,
		}
		events := weir.FromSourceWithWatermarks[nexmark.Event, nexmark.Split](env, nexmark.Source{Config: cfg}, ws, "nexmark")
		counts := weir.Map(events, func(e nexmark.Event) typeCount { return typeCount{e.Type.String(), 1} })
		keyed := weir.KeyBy(counts, func(c typeCount) string { return c.Type })
		windows := weir.WindowReduceProcess(weir.Window(keyed, weir.TumblingEventTimeWindows(10*time.Second)),
			func(a, b typeCount) typeCount { return typeCount{a.Type, a.N + b.N} },
			weir.ProcessWindowFunc[string, typeCount, string](func(ctx weir.WindowContext[string], r []typeCount, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s %d %d", ctx.CurrentKey(), ctx.Window().Start, r[0].N))
				return nil
			}))
		out := weir.Collect(windows)
		job, err := env.ExecuteAsync(context.Background(), "nexmark-windows")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for s := range out.All() {
			var typ string
			var start, n int64
			if _, err := fmt.Sscanf(s, "%s %d %d", &typ, &start, &n); err != nil {
				t.Fatal(err)
			}
			got[fmt.Sprintf("%s %d", typ, start)] += n
		}
		if _, err := job.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("parallelism %d: windows %v, want %v", p, got, want)
		}
	}
}
