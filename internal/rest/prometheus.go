package rest

import (
	"bufio"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/weirhq/weir/internal/protocol"
)

// GET /metrics: the Prometheus text exposition of the cluster's current
// view (docs/observability.md, decisions 1-3), with the names and labels of
// Flink's PrometheusReporter, so that dashboards and alert rules written for
// Flink read Weir's. It is made on each scrape from what the REST API
// serves (nothing is registered per task, nothing costs per record), and
// one scrape of the JobManager covers every TaskManager, which push their
// counters to it. Flink's reporter exports counters as gauges (a task's
// counters start again when it is redeployed); so does this.

// promLabel is one label of a sample.
type promLabel struct{ name, value string }

// promSample is one sample of a metric family.
type promSample struct {
	labels []promLabel
	value  string
}

// promFamilies collects samples by metric name.
type promFamilies map[string][]promSample

func (f promFamilies) add(name, value string, labels ...promLabel) {
	f[name] = append(f[name], promSample{labels: labels, value: value})
}

// promName is Flink's PrometheusReporter's name of a metric in a scope:
// "flink_<scope>_<name>", characters other than [a-zA-Z0-9:_] replaced
// by '_'.
func promName(scope, name string) string {
	b := []byte("flink_" + scope + "_" + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func (h *handler) prometheus(w http.ResponseWriter, r *http.Request) {
	f := promFamilies{}
	o := h.c.Overview()
	jm := func(name string, v int) { f.add(promName("jobmanager", name), strconv.Itoa(v)) }
	jm("numRegisteredTaskManagers", o.TaskManagers)
	jm("taskSlotsTotal", o.SlotsTotal)
	jm("taskSlotsAvailable", o.SlotsAvailable)
	jm("numRunningJobs", o.JobsRunning)
	for _, js := range h.c.Jobs() {
		if js.Status.Terminal() {
			continue // Flink's reporter drops a job's metrics when it ends
		}
		d, ok := h.c.Job(js.ID)
		if !ok {
			continue
		}
		job := []promLabel{{"job_id", d.ID}, {"job_name", d.Name}}
		if d.State == protocol.JobRunning {
			f.add(promName("jobmanager_job", "uptime"), strconv.FormatInt(max(d.Duration, 0), 10), job...)
		}
		for _, v := range d.Vertices {
			subtasks, ok := h.mets.SubtaskMetrics(d.ID, v.ID)
			if !ok {
				continue
			}
			for i, m := range subtasks {
				task := append(slices.Clone(job), promLabel{"task_id", v.ID}, promLabel{"task_name", v.Name}, promLabel{"subtask_index", strconv.Itoa(i)})
				for id, val := range m {
					if _, err := strconv.ParseFloat(val, 64); err != nil {
						continue // not a number (a watermark status)
					}
					if op, name, labels, isOp := operatorMetric(id); isOp {
						f.add(promName("taskmanager_job_task_operator", name), val, append(append(slices.Clone(task), promLabel{"operator_name", op}), labels...)...)
					} else {
						f.add(promName("taskmanager_job_task", id), val, task...)
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	for _, n := range slices.Sorted(maps.Keys(f)) {
		samples := f[n]
		slices.SortFunc(samples, func(a, b promSample) int { return strings.Compare(labelKey(a.labels), labelKey(b.labels)) })
		bw.WriteString("# TYPE " + n + " gauge\n")
		for _, s := range samples {
			bw.WriteString(n)
			if len(s.labels) > 0 {
				bw.WriteByte('{')
				for i, l := range s.labels {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(l.name + `="` + promEscaper.Replace(l.value) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + s.value + "\n")
		}
	}
	bw.Flush()
}

// kafkaPartitionMetric is a per-partition metric of a Kafka source in a
// subtask's scope: "<operator>.KafkaSourceReader.topic.<topic>.partition.<n>.<name>"
// (topics and operators may hold dots; partitions and names do not).
var kafkaPartitionMetric = regexp.MustCompile(`^(.*)\.KafkaSourceReader\.topic\.(.+)\.partition\.([0-9]+)\.([A-Za-z]+)$`)

// operatorMetric splits a subtask-scope metric id "<operator>.<name>" into
// the operator, the name in Flink's reporter and the labels of its group's
// variables: a Kafka source's per-partition metrics become
// KafkaSourceReader_topic_partition_<name> with labels topic and
// partition, as Flink's reporter names them; its other groups join the
// name with '_'. isOp is false for a task metric (no dot).
func operatorMetric(id string) (op, name string, labels []promLabel, isOp bool) {
	if m := kafkaPartitionMetric.FindStringSubmatch(id); m != nil {
		return m[1], "KafkaSourceReader_topic_partition_" + m[4], []promLabel{{"topic", m[2]}, {"partition", m[3]}}, true
	}
	if i := strings.Index(id, ".KafkaSourceReader."); i >= 0 {
		return id[:i], id[i+1:], nil, true
	}
	if i := strings.LastIndex(id, "."); i >= 0 {
		return id[:i], id[i+1:], nil, true
	}
	return "", id, nil, false
}

// labelKey orders samples of one family (numerically by subtask within a
// vertex would need parsing; text order is stable, which is what matters).
func labelKey(ls []promLabel) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.name + "=" + l.value + "\x00")
	}
	return b.String()
}
