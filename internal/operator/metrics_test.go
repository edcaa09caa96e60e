package operator

import (
	"strings"
	"testing"
)

// Counters count on the owner's goroutine and become visible only when
// published; names are truncated as Flink truncates operator names.
func TestMetricsPublish(t *testing.T) {
	var s IOStats
	cur := 0
	ctx := NewContext(&cur, 0)
	ctx.OperatorName = strings.Repeat("w", 100)
	ctx.SetMetrics(&s.Metrics)
	c := ctx.Counter("numLateRecordsDropped")
	if again := ctx.Counter("numLateRecordsDropped"); again != c {
		t.Fatal("registering a name twice must return the same counter")
	}
	c.Inc()
	c.Add(2)
	if got := s.Metrics.Snapshot(); len(got) != 1 || got[0].Value != 0 {
		t.Fatalf("before publishing: %+v", got)
	}
	s.OutputIdle = true
	s.Publish()
	got := s.Metrics.Snapshot()
	if len(got) != 1 || got[0].Value != 3 || got[0].Name != "numLateRecordsDropped" || got[0].Operator != strings.Repeat("w", MaxOperatorNameLen) {
		t.Fatalf("after publishing: %+v", got)
	}
	if !s.Snapshot().OutputIdle {
		t.Fatal("OutputIdle not published")
	}
	// Outside a task a counter still counts.
	free := NewContext(&cur, 0).Counter("x")
	free.Inc()
	if free.Count() != 1 {
		t.Fatal("unregistered counter does not count")
	}
}
