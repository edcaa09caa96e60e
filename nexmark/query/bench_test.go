package query

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/weirhq/weir/nexmark"
)

// BenchmarkQuery runs a query over generated events as `weir nexmark run`
// does, discarding its results, to profile it (go test -run '^$' -bench
// Query -cpuprofile ...): NEXMARK_QUERY names the query (default q17),
// NEXMARK_EVENTS the events per run (default 2 M), NEXMARK_PARALLELISM the
// parallelism (default 2).
func BenchmarkQuery(b *testing.B) {
	name, events, p := "q17", int64(2_000_000), 2
	if s := os.Getenv("NEXMARK_QUERY"); s != "" {
		name = s
	}
	if s := os.Getenv("NEXMARK_EVENTS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		events = n
	}
	if s := os.Getenv("NEXMARK_PARALLELISM"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		p = n
	}
	q, err := Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	cfg := nexmark.DefaultConfig()
	cfg.Events = events
	var rate float64
	for b.Loop() {
		s, err := Run(context.Background(), q, Options{Config: cfg, Parallelism: p})
		if err != nil {
			b.Fatal(err)
		}
		rate += s.EventsPerSecondPerCore
	}
	b.ReportMetric(rate/float64(b.N), "events/cpu-s")
}
