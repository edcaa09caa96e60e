package rest_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weirhq/weir/internal/rest"
)

// promCluster is metricCluster with its vertex "v" in the running job's
// details, named with a quote and a newline (label escaping).
type promCluster struct{ metricCluster }

func (p *promCluster) Job(id string) (rest.JobDetails, bool) {
	d, ok := p.metricCluster.Job(id)
	if ok && id == runningID {
		d.Vertices = append(d.Vertices, rest.Vertex{ID: "v", Name: "Window \"1\"\nsum", Parallelism: 3})
	}
	return d, ok
}

// GET /metrics, parsed by Prometheus's own text parser, has Flink's
// PrometheusReporter names and labels, a sample per reporting subtask
// with the REST API's values, operator metrics in the operator scope, the
// JobManager's cluster gauges, and nothing for jobs that ended or for
// values that are not numbers.
func TestPrometheusExposition(t *testing.T) {
	c := &promCluster{}
	h := newTestHandler(c)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("Prometheus's parser: %v\n%s", err, rec.Body)
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	rest, _ := c.SubtaskMetrics(runningID, "v")
	in := fams["flink_taskmanager_job_task_numRecordsIn"]
	if in == nil || len(in.GetMetric()) != 2 {
		t.Fatalf("numRecordsIn: %v, want a sample for each of the two reporting subtasks\n%s", in, rec.Body)
	}
	for _, m := range in.GetMetric() {
		i, _ := strconv.Atoi(label(m, "subtask_index"))
		want, _ := strconv.ParseFloat(rest[i]["numRecordsIn"], 64)
		if m.GetGauge().GetValue() != want || label(m, "job_id") != runningID || label(m, "task_id") != "v" || label(m, "task_name") != "Window \"1\"\nsum" {
			t.Errorf("sample %v, want subtask %d = %v (the REST API's) with job_id, task_id and task_name", m, i, want)
		}
	}
	late := fams["flink_taskmanager_job_task_operator_numLateRecordsDropped"]
	if late == nil || len(late.GetMetric()) != 2 || label(late.GetMetric()[0], "operator_name") != "Window" {
		t.Errorf("the operator's counter: %v, want two samples with operator_name Window", late)
	}
	if g := fams["flink_jobmanager_taskSlotsTotal"]; g == nil || g.GetMetric()[0].GetGauge().GetValue() != 4 {
		t.Errorf("taskSlotsTotal: %v, want 4 (the overview's)", g)
	}
	for name := range fams {
		if strings.Contains(name, "WatermarkStatus") {
			t.Errorf("%s: a status is not a number, want it left out", name)
		}
	}
	if strings.Contains(rec.Body.String(), failedID) {
		t.Errorf("the failed job's metrics are exposed:\n%s", rec.Body)
	}
}

// Operator metric ids split into the operator, Flink's reporter's name and
// its group's variables as labels; operators and topics may hold dots.
func TestOperatorMetricNames(t *testing.T) {
	for _, c := range []struct{ id, op, name, labels string }{
		{"numRecordsIn", "", "numRecordsIn", ""},
		{"Window.numLateRecordsDropped", "Window", "numLateRecordsDropped", ""},
		{"Source: a.b.pendingRecords", "Source: a.b", "pendingRecords", ""},
		{"Source: k.KafkaSourceReader.commitsSucceeded", "Source: k", "KafkaSourceReader.commitsSucceeded", ""},
		{"Source: k.KafkaSourceReader.topic.orders.eu.partition.12.currentOffset", "Source: k", "KafkaSourceReader_topic_partition_currentOffset", "topic=orders.eu,partition=12"},
	} {
		op, name, labels, _ := rest.OperatorMetric(c.id)
		var ls []string
		for _, l := range labels {
			ls = append(ls, l[0]+"="+l[1])
		}
		if op != c.op || name != c.name || strings.Join(ls, ",") != c.labels {
			t.Errorf("%q: operator %q, name %q, labels %v; want %q, %q, %s", c.id, op, name, ls, c.op, c.name, c.labels)
		}
	}
}
