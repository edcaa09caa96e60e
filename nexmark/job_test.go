package nexmark_test

import (
	"context"
	"slices"
	"testing"

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
