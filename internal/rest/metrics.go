package rest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MetricReporter is implemented by clusters that report metrics.
type MetricReporter interface {
	// SubtaskMetrics returns each subtask's metrics of one vertex, named as
	// Flink names them in a subtask's scope: task metrics by their name
	// ("numRecordsIn"), operator metrics as "<operator name>.<name>"; the
	// values as strings. A subtask that reports nothing has an empty map.
	// ok is false for an unknown job or vertex.
	SubtaskMetrics(jobID, vertexID string) (subtasks []map[string]string, ok bool)
}

// MetricID is an entry of a metric list (a request without "get").
type MetricID struct {
	ID string `json:"id"`
}

// AggregatedMetric is Flink's answer of /subtasks/metrics?get=...: the
// aggregates over the subtasks' numeric values; those not asked for with
// "agg" are left out.
type AggregatedMetric struct {
	ID  string   `json:"id"`
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	Avg *float64 `json:"avg,omitempty"`
	Sum *float64 `json:"sum,omitempty"`
}

// aggregations are the values of "agg" Weir serves (Flink 1.x's; newer
// Flink also has "skew").
var aggregations = []string{"min", "max", "avg", "sum"}

// metricsOf fetches a vertex's subtask metrics or answers 404.
func (h *handler) metricsOf(w http.ResponseWriter, r *http.Request, id string) ([]map[string]string, bool) {
	vid := r.PathValue("vertexid")
	subs, ok := h.mets.SubtaskMetrics(id, vid)
	if !ok {
		writeError(w, http.StatusNotFound, "Job "+id+" or vertex "+vid+" not found")
	}
	return subs, ok
}

// getParam splits the comma-separated "get" parameter; present is false
// when there is none (a request for the list of metrics).
func getParam(r *http.Request) (names []string, present bool) {
	q := r.URL.Query()
	if !q.Has("get") {
		return nil, false
	}
	for _, v := range q["get"] {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names, true
}

// answerMetrics writes the sorted list of ids, or with "get" the requested
// metrics that exist, in the order asked, as Flink's metric handlers do.
func answerMetrics(w http.ResponseWriter, r *http.Request, all map[string]string) {
	names, get := getParam(r)
	if !get {
		ids := make([]MetricID, 0, len(all))
		for n := range all {
			ids = append(ids, MetricID{ID: n})
		}
		slices.SortFunc(ids, func(a, b MetricID) int { return strings.Compare(a.ID, b.ID) })
		writeJSON(w, http.StatusOK, ids)
		return
	}
	out := make([]Metric, 0, len(names))
	for _, n := range names {
		if v, ok := all[n]; ok {
			out = append(out, Metric{ID: n, Value: v})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// vertexMetrics serves /jobs/{jobid}/vertices/{vertexid}/metrics: every
// subtask's metrics prefixed with its index, "<subtask>.<name>".
func (h *handler) vertexMetrics(w http.ResponseWriter, r *http.Request, id string) {
	subs, ok := h.metricsOf(w, r, id)
	if !ok {
		return
	}
	all := map[string]string{}
	for i, m := range subs {
		for n, v := range m {
			all[strconv.Itoa(i)+"."+n] = v
		}
	}
	answerMetrics(w, r, all)
}

// subtaskMetrics serves /jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics.
func (h *handler) subtaskMetrics(w http.ResponseWriter, r *http.Request, id string) {
	raw := r.PathValue("subtaskindex")
	i, err := strconv.Atoi(raw)
	if err != nil || i < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Malformed subtask index %q: a subtask index is a non-negative integer", raw))
		return
	}
	subs, ok := h.metricsOf(w, r, id)
	if !ok {
		return
	}
	if i >= len(subs) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Subtask %d not found: the vertex has %d subtasks", i, len(subs)))
		return
	}
	answerMetrics(w, r, subs[i])
}

// aggregatedMetrics serves /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics
// (Flink's AggregatingSubtasksMetricsHandler): without "get" the names any
// selected subtask has; with it, per name, the aggregates ("agg", default
// all) over the selected subtasks ("subtasks", e.g. "0,2-3"; default all)
// that have a numeric value. Names no selected subtask has a number for are
// left out.
func (h *handler) aggregatedMetrics(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	aggs, err := aggParam(q["agg"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	subs, ok := h.metricsOf(w, r, id)
	if !ok {
		return
	}
	sel, err := subtasksParam(q["subtasks"], len(subs))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	names, get := getParam(r)
	if !get {
		union := map[string]string{}
		for _, i := range sel {
			for n, v := range subs[i] {
				union[n] = v
			}
		}
		answerMetrics(w, r, union)
		return
	}
	out := make([]AggregatedMetric, 0, len(names))
	for _, n := range names {
		var mn, mx, sum float64
		count := 0
		for _, i := range sel {
			v, err := strconv.ParseFloat(subs[i][n], 64)
			if err != nil {
				continue // absent or not a number (Flink skips those too)
			}
			if count == 0 || v < mn {
				mn = v
			}
			if count == 0 || v > mx {
				mx = v
			}
			sum += v
			count++
		}
		if count == 0 {
			continue
		}
		avg := sum / float64(count)
		a := AggregatedMetric{ID: n}
		for _, k := range aggs {
			switch k {
			case "min":
				a.Min = &mn
			case "max":
				a.Max = &mx
			case "avg":
				a.Avg = &avg
			case "sum":
				a.Sum = &sum
			}
		}
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, out)
}

// aggParam parses "agg" (comma-separated; absent: all).
func aggParam(vals []string) ([]string, error) {
	if len(vals) == 0 {
		return aggregations, nil
	}
	var out []string
	for _, v := range vals {
		for a := range strings.SplitSeq(v, ",") {
			a = strings.TrimSpace(a)
			if !slices.Contains(aggregations, a) {
				return nil, fmt.Errorf("Unknown aggregation %q: use %s", a, strings.Join(aggregations, ", "))
			}
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// subtasksParam parses "subtasks" (indexes and ranges "a-b", comma-separated;
// absent: all n). Indexes past the vertex's subtasks are ignored, as Flink
// finds no metrics for them.
func subtasksParam(vals []string, n int) ([]int, error) {
	if len(vals) == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	seen := make([]bool, n)
	bad := func(s string) error {
		return fmt.Errorf("Malformed subtasks %q: give indexes and ranges such as 0,2-3", s)
	}
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			lo, hi, isRange := strings.Cut(part, "-")
			a, err := strconv.Atoi(lo)
			if err != nil || a < 0 {
				return nil, bad(part)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil || b < a {
					return nil, bad(part)
				}
			}
			for i := a; i <= b && i < n; i++ {
				seen[i] = true
			}
		}
	}
	var out []int
	for i, s := range seen {
		if s {
			out = append(out, i)
		}
	}
	return out, nil
}

// metricsPath is a vertex's metric path with a query of get= names.
func metricsPath(id, vertexID, tail string, get []string) string {
	p := "/jobs/" + url.PathEscape(id) + "/vertices/" + url.PathEscape(vertexID) + tail
	if len(get) > 0 {
		p += "?get=" + url.QueryEscape(strings.Join(get, ","))
	}
	return p
}

// VertexMetrics fetches GET /jobs/:jobid/vertices/:vertexid/metrics: with
// no names the list of metric ids (Value empty), else those metrics.
func (c *Client) VertexMetrics(ctx context.Context, id, vertexID string, get ...string) ([]Metric, error) {
	var ms []Metric
	err := c.do(ctx, http.MethodGet, metricsPath(id, vertexID, "/metrics", get), &ms)
	return ms, err
}

// SubtaskMetrics fetches GET /jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics.
func (c *Client) SubtaskMetrics(ctx context.Context, id, vertexID string, subtask int, get ...string) ([]Metric, error) {
	var ms []Metric
	err := c.do(ctx, http.MethodGet, metricsPath(id, vertexID, "/subtasks/"+strconv.Itoa(subtask)+"/metrics", get), &ms)
	return ms, err
}

// AggregatedMetrics fetches GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=...
func (c *Client) AggregatedMetrics(ctx context.Context, id, vertexID string, get ...string) ([]AggregatedMetric, error) {
	var ms []AggregatedMetric
	err := c.do(ctx, http.MethodGet, metricsPath(id, vertexID, "/subtasks/metrics", get), &ms)
	return ms, err
}
