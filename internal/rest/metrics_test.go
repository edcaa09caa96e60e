package rest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/rest"
)

// metricCluster adds a vertex "v" of three subtasks with metrics to the fake
// cluster's running job. Subtask 2 reports nothing (not deployed yet).
type metricCluster struct{ fakeCluster }

func (m *metricCluster) SubtaskMetrics(id, vid string) ([]map[string]string, bool) {
	if id != runningID || vid != "v" {
		return nil, false
	}
	return []map[string]string{
		{"numRecordsIn": "10", "Window.numLateRecordsDropped": "3", "currentOutputWatermarkStatus": "ACTIVE"},
		{"numRecordsIn": "30", "Window.numLateRecordsDropped": "0", "currentOutputWatermarkStatus": "IDLE"},
		{},
	}, true
}

// The three metric endpoints answer in Flink's shapes: a list of
// {"id"} without get, {"id","value"} with it on a vertex ("<subtask>.")
// and a subtask (no prefix), and {"id","min","max","avg","sum"} aggregated.
func TestMetricShapes(t *testing.T) {
	h := newTestHandler(&metricCluster{})
	base := "/jobs/" + runningID + "/vertices/v"
	cases := []struct{ path, want string }{
		{base + "/metrics", `[{"id":"0.Window.numLateRecordsDropped"},{"id":"0.currentOutputWatermarkStatus"},{"id":"0.numRecordsIn"},` +
			`{"id":"1.Window.numLateRecordsDropped"},{"id":"1.currentOutputWatermarkStatus"},{"id":"1.numRecordsIn"}]`},
		{base + "/metrics?get=1.numRecordsIn,0.Window.numLateRecordsDropped,9.nope",
			`[{"id":"1.numRecordsIn","value":"30"},{"id":"0.Window.numLateRecordsDropped","value":"3"}]`},
		{"/v1" + base + "/metrics?get=", `[]`},
		{base + "/subtasks/1/metrics", `[{"id":"Window.numLateRecordsDropped"},{"id":"currentOutputWatermarkStatus"},{"id":"numRecordsIn"}]`},
		{base + "/subtasks/0/metrics?get=numRecordsIn", `[{"id":"numRecordsIn","value":"10"}]`},
		{base + "/subtasks/2/metrics", `[]`},
		{base + "/subtasks/metrics", `[{"id":"Window.numLateRecordsDropped"},{"id":"currentOutputWatermarkStatus"},{"id":"numRecordsIn"}]`},
		{base + "/subtasks/metrics?get=numRecordsIn,Window.numLateRecordsDropped,currentOutputWatermarkStatus",
			`[{"id":"numRecordsIn","min":10,"max":30,"avg":20,"sum":40},{"id":"Window.numLateRecordsDropped","min":0,"max":3,"avg":1.5,"sum":3}]`},
		{base + "/subtasks/metrics?get=numRecordsIn&agg=sum,max", `[{"id":"numRecordsIn","max":30,"sum":40}]`},
		{base + "/subtasks/metrics?get=numRecordsIn&subtasks=1-2", `[{"id":"numRecordsIn","min":30,"max":30,"avg":30,"sum":30}]`},
		{base + "/subtasks/metrics?get=numRecordsIn&subtasks=2", `[]`},
	}
	for _, tc := range cases {
		rec := serve(t, h, "GET", tc.path)
		if rec.Code != 200 {
			t.Errorf("GET %s: status %d: %s", tc.path, rec.Code, rec.Body)
			continue
		}
		if got := strings.TrimSpace(rec.Body.String()); got != tc.want {
			t.Errorf("GET %s:\n got %s\nwant %s", tc.path, got, tc.want)
		}
	}
	// The client reads the same shapes.
	var agg []rest.AggregatedMetric
	rec := serve(t, h, "GET", base+"/subtasks/metrics?get=numRecordsIn")
	if err := json.Unmarshal(rec.Body.Bytes(), &agg); err != nil || len(agg) != 1 || *agg[0].Sum != 40 {
		t.Fatalf("aggregated %s: %+v, %v", rec.Body, agg, err)
	}
}

func TestMetricErrors(t *testing.T) {
	h := newTestHandler(&metricCluster{})
	base := "/jobs/" + runningID + "/vertices/"
	cases := []struct {
		path   string
		status int
		msg    string
	}{
		{base + "nope/metrics", 404, "vertex nope not found"},
		{"/jobs/" + unknownID + "/vertices/v/subtasks/metrics", 404, "not found"},
		{base + "v/subtasks/x/metrics", 400, `Malformed subtask index "x"`},
		{base + "v/subtasks/3/metrics", 404, "Subtask 3 not found: the vertex has 3 subtasks"},
		{base + "v/subtasks/metrics?get=numRecordsIn&agg=median", 400, `Unknown aggregation "median"`},
		{base + "v/subtasks/metrics?subtasks=2-1", 400, `Malformed subtasks "2-1"`},
		{"/jobs/nope/vertices/v/metrics", 400, "Malformed job id"},
	}
	for _, tc := range cases {
		rec := serve(t, h, "GET", tc.path)
		var eb rest.ErrorBody
		if rec.Code != tc.status || json.Unmarshal(rec.Body.Bytes(), &eb) != nil || len(eb.Errors) != 1 || !strings.Contains(eb.Errors[0], tc.msg) {
			t.Errorf("GET %s: %d %s; want %d with %q", tc.path, rec.Code, rec.Body, tc.status, tc.msg)
		}
	}
	// A cluster without metrics has no such routes.
	if rec := serve(t, newTestHandler(&fakeCluster{}), "GET", base+"v/metrics"); rec.Code != 404 {
		t.Errorf("without a MetricReporter: %d", rec.Code)
	}
}
