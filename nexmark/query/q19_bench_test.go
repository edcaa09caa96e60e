package query_test

import (
	"context"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// benchQuery runs a query over b.N generated events at Nexmark's default
// rate, parallelism 2, results discarded (as `weir nexmark run`), and
// reports events per CPU second.
func benchQuery(b *testing.B, name string) {
	q, err := query.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	cfg := nexmark.DefaultConfig()
	cfg.Events = int64(max(b.N, 100_000))
	s, err := query.Run(context.Background(), q, query.Options{Config: cfg, Parallelism: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(s.EventsPerSecondPerCore, "events/cpu-s")
}

// BenchmarkQ19 and BenchmarkQ20: go test ./nexmark/query -run '^$'
// -bench 'Q19|Q20' -benchtime 2000000x -cpuprofile cpu.out
func BenchmarkQ19(b *testing.B) { benchQuery(b, "q19") }
func BenchmarkQ20(b *testing.B) { benchQuery(b, "q20") }
