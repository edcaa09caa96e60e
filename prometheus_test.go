package weir_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weirhq/weir"
)

// The JobManager's /metrics, scraped while a job runs, counts in Flink's
// flink_taskmanager_job_task_numRecordsIn exactly the records a filter let
// through (an independent count), summed over the subtasks of the vertex
// after it.
func TestPrometheusCountsRecords(t *testing.T) {
	const n = 5000
	var passed atomic.Int64
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	src := weir.Generate(env, -1, 50000, func(i int64) int64 { return i })
	first := weir.Filter(src, func(int64) bool { return passed.Add(1) <= n })
	weir.Discard(weir.Map(first.Rebalance(), func(v int64) int64 { return v }).Name("Counted"))
	job, err := env.ExecuteAsync(context.Background(), "scraped")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + job.RESTAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(body)
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(last))
		if err != nil {
			t.Fatalf("Prometheus's parser: %v\n%s", err, last)
		}
		var sum float64
		subtasks := 0
		for _, m := range fams["flink_taskmanager_job_task_numRecordsIn"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task_name" && strings.HasPrefix(l.GetValue(), "Counted") {
					sum += m.GetGauge().GetValue()
					subtasks++
				}
			}
		}
		if passed.Load() > n && sum == n && subtasks == 2 {
			return
		}
	}
	t.Fatalf("numRecordsIn of the vertex after the filter never summed to %d over its 2 subtasks; last scrape:\n%s", n, last)
}
