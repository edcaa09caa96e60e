package nexmark_test

import (
	"context"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/nexmark"
)

// BenchmarkSourceDiscard is the bare generator as a job: the Nexmark
// source into a discard sink, chained into one task at parallelism 1, b.N
// events per round; events/s/core is events per CPU second of the whole
// process (the yardstick q0 is compared with). Compare with BenchmarkGenerator,
// the generator alone without the engine.
func BenchmarkSourceDiscard(b *testing.B) {
	cfg := nexmark.DefaultConfig()
	cfg.Events = int64(b.N)
	start := cpumeter.Now()
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	weir.Discard(weir.FromSource[nexmark.Event, nexmark.Split](env, nexmark.Source{Config: cfg}, "nexmark"))
	if _, err := env.Execute(context.Background(), "nexmark-discard"); err != nil {
		b.Fatal(err)
	}
	cpumeter.Report(b, int64(b.N), start)
}

// BenchmarkSourceRebalance is the source into a discard sink at
// parallelism 2 through a rebalance, so every event crosses the network
// through its codec: derived from Event, or EventCodec.
func BenchmarkSourceRebalance(b *testing.B) {
	for _, own := range []bool{false, true} {
		name := "derived"
		if own {
			name = "EventCodec"
		}
		b.Run(name, func(b *testing.B) {
			cfg := nexmark.DefaultConfig()
			cfg.Events = int64(b.N)
			start := cpumeter.Now()
			env := weir.NewEnvironment(weir.Config{Parallelism: 2})
			events := weir.FromSource[nexmark.Event, nexmark.Split](env, nexmark.Source{Config: cfg}, "nexmark")
			if own {
				events = events.WithCodec(nexmark.EventCodec())
			}
			weir.Discard(events.Rebalance())
			if _, err := env.Execute(context.Background(), "nexmark-rebalance"); err != nil {
				b.Fatal(err)
			}
			cpumeter.Report(b, int64(b.N), start)
		})
	}
}
