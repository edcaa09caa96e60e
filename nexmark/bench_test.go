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
// process (issue 13's yardstick for q0). Compare with BenchmarkGenerator,
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
