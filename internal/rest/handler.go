package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"net/http"
	"slices"
	"strings"

	"github.com/weirhq/weir/clock"
)

// Defaults reported by /overview and /config unless WithVersion says otherwise.
const (
	DefaultVersion  = "0.0.0-dev"
	DefaultRevision = "unknown"
)

// contentType is what every answer, error or not, is served as.
const contentType = "application/json"

// Option configures NewHandler and NewServer.
type Option func(*options)

type options struct {
	version, revision string
	clock             clock.Clock
}

// WithVersion sets the Weir version and commit reported as flink-version,
// flink-commit and flink-revision.
func WithVersion(version, revision string) Option {
	return func(o *options) { o.version, o.revision = version, revision }
}

// WithClock sets the clock that fills JobDetails.Now when the Cluster leaves
// it zero. The default is the system clock.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

func buildOptions(opts []Option) options {
	o := options{version: DefaultVersion, revision: DefaultRevision, clock: clock.System{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

type handler struct {
	c    Cluster
	tms  TaskManagerLister  // nil when c does not implement it
	cps  CheckpointReporter // nil when c does not implement it
	wms  WatermarkReporter  // nil when c does not implement it
	mets MetricReporter     // nil when c does not implement it
	sps  SavepointOperator  // nil when c does not implement it (savepoints.go)
	vds  VertexDetailer     // nil when c does not implement it (vertex.go)
	opts options
}

// byMethod maps an HTTP method to the handler for one path.
type byMethod map[string]http.HandlerFunc

// NewHandler serves the REST API for c. Routes are registered without a
// method in the pattern and dispatched per method here, so that a wrong method
// answers 405 with a JSON body (the mux's own 405 is plain text). Every route
// is served both at its path and under /v1.
func NewHandler(c Cluster, opts ...Option) http.Handler {
	h := &handler{c: c, opts: buildOptions(opts)}
	h.tms, _ = c.(TaskManagerLister)
	h.cps, _ = c.(CheckpointReporter)
	h.wms, _ = c.(WatermarkReporter)
	h.mets, _ = c.(MetricReporter)
	h.sps, _ = c.(SavepointOperator)
	h.vds, _ = c.(VertexDetailer)

	routes := map[string]byMethod{
		"/config":                  {http.MethodGet: h.config},
		"/overview":                {http.MethodGet: h.overview},
		"/jobs":                    {http.MethodGet: h.jobs},
		"/jobs/overview":           {http.MethodGet: h.jobsOverview},
		"/jobs/{jobid}":            {http.MethodGet: h.withJobID(h.job), http.MethodPatch: h.withJobID(h.cancel)},
		"/jobs/{jobid}/exceptions": {http.MethodGet: h.withJobID(h.exceptions)},
	}
	if h.tms != nil {
		routes["/taskmanagers"] = byMethod{http.MethodGet: h.taskManagers}
	}
	if h.cps != nil {
		routes["/jobs/{jobid}/checkpoints"] = byMethod{http.MethodGet: h.withJobID(h.checkpoints)}
		routes["/jobs/{jobid}/checkpoints/config"] = byMethod{http.MethodGet: h.withJobID(h.checkpointConfig)}
		routes["/jobs/{jobid}/checkpoints/details/{checkpointid}"] = byMethod{http.MethodGet: h.withJobID(h.checkpointDetails)}
		routes["/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}"] = byMethod{http.MethodGet: h.withJobID(h.checkpointSubtasks)}
	}
	if h.vds != nil {
		routes["/jobs/{jobid}/vertices/{vertexid}"] = byMethod{http.MethodGet: h.withJobID(h.vertexDetails)}
	}
	if h.wms != nil {
		routes["/jobs/{jobid}/vertices/{vertexid}/watermarks"] = byMethod{http.MethodGet: h.withJobID(h.watermarks)}
	}
	if h.mets != nil {
		routes["/jobs/{jobid}/vertices/{vertexid}/metrics"] = byMethod{http.MethodGet: h.withJobID(h.vertexMetrics)}
		routes["/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics"] = byMethod{http.MethodGet: h.withJobID(h.aggregatedMetrics)}
		routes["/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics"] = byMethod{http.MethodGet: h.withJobID(h.subtaskMetrics)}
		routes["/metrics"] = byMethod{http.MethodGet: h.prometheus} // prometheus.go
	}
	h.savepointRoutes(routes)
	mux := http.NewServeMux()
	for path, m := range routes {
		mux.Handle(path, m)
		mux.Handle("/v1"+path, m)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	return mux
}

// ServeHTTP dispatches on the method; HEAD is served wherever GET is.
func (m byMethod) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if f, ok := m[method]; ok {
		f(w, r)
		return
	}
	allowed := make([]string, 0, len(m)+1)
	for k := range m {
		allowed = append(allowed, k)
	}
	if _, ok := m[http.MethodGet]; ok {
		allowed = append(allowed, http.MethodHead)
	}
	slices.Sort(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed,
		fmt.Sprintf("Method %s not allowed for %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
}

// withJobID rejects a malformed {jobid} with 400 before calling f.
func (h *handler) withJobID(f func(w http.ResponseWriter, r *http.Request, id string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("jobid")
		if !ValidJobID(id) {
			writeError(w, http.StatusBadRequest,
				fmt.Sprintf("Malformed job id %q: a job id is %d lowercase hex characters", id, JobIDLen))
			return
		}
		f(w, r, id)
	}
}

func (h *handler) config(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Config{
		RefreshInterval: 3000,
		TimezoneName:    "UTC",
		TimezoneOffset:  0,
		FlinkVersion:    h.opts.version,
		FlinkRevision:   h.opts.revision,
		Features:        Features{WebCancel: true},
	})
}

func (h *handler) overview(w http.ResponseWriter, _ *http.Request) {
	ov := h.c.Overview()
	if ov.FlinkVersion == "" {
		ov.FlinkVersion = h.opts.version
	}
	if ov.FlinkCommit == "" {
		ov.FlinkCommit = h.opts.revision
	}
	writeJSON(w, http.StatusOK, ov)
}

func (h *handler) jobs(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, JobList{Jobs: orEmpty(h.c.Jobs())})
}

// jobsOverview asks for each listed job's details; a job that disappears
// between the two calls is left out.
func (h *handler) jobsOverview(w http.ResponseWriter, _ *http.Request) {
	jobs := h.c.Jobs()
	out := make([]JobOverview, 0, len(jobs))
	for _, j := range jobs {
		if d, ok := h.c.Job(j.ID); ok {
			out = append(out, OverviewOf(d))
		}
	}
	writeJSON(w, http.StatusOK, JobOverviewList{Jobs: out})
}

func (h *handler) job(w http.ResponseWriter, _ *http.Request, id string) {
	d, ok := h.c.Job(id)
	if !ok {
		writeJobNotFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, h.completeDetails(d))
}

// completeDetails fills what the Cluster may leave out, so lists are [] and
// maps {} rather than null. It copies what it changes: d's slices and maps
// belong to the Cluster.
func (h *handler) completeDetails(d JobDetails) JobDetails {
	if d.Now == 0 {
		d.Now = h.opts.clock.NowMillis()
	}
	if d.Timestamps == nil {
		d.Timestamps = map[protocol.JobState]int64{}
	}
	vs := make([]Vertex, len(d.Vertices))
	copy(vs, d.Vertices)
	for i := range vs {
		if vs[i].Tasks == nil {
			vs[i].Tasks = CountStates(nil)
		}
	}
	d.Vertices = vs
	if d.StatusCounts == nil {
		d.StatusCounts = CountStates(nil)
	}
	if d.Plan.ID == "" {
		d.Plan.ID = d.ID
	}
	if d.Plan.Name == "" {
		d.Plan.Name = d.Name
	}
	if d.Plan.Type == "" {
		d.Plan.Type = PlanTypeStreaming
	}
	d.Plan.Nodes = orEmpty(d.Plan.Nodes)
	return withFlinkClientFields(d)
}

func (h *handler) exceptions(w http.ResponseWriter, _ *http.Request, id string) {
	ex, ok := h.c.Exceptions(id)
	if !ok {
		writeJobNotFound(w, id)
		return
	}
	ex.AllExceptions = orEmpty(ex.AllExceptions)
	ex.ExceptionHistory.Entries = orEmpty(ex.ExceptionHistory.Entries)
	writeJSON(w, http.StatusOK, ex)
}

// cancel serves PATCH /jobs/:jobid. As in Flink, mode=cancel or no mode
// cancels, and the answer is 202 with {} without waiting for the job to stop.
func (h *handler) cancel(w http.ResponseWriter, r *http.Request, id string) {
	if mode := r.URL.Query().Get("mode"); mode != "" && mode != "cancel" {
		writeError(w, http.StatusBadRequest,
			fmt.Sprintf("Unsupported termination mode %q: only \"cancel\" is supported", mode))
		return
	}
	switch err := h.c.Cancel(id); {
	case err == nil:
		writeJSON(w, http.StatusAccepted, struct{}{})
	case errors.Is(err, ErrJobNotFound):
		writeJobNotFound(w, id)
	default:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Cancelling job %s failed: %v", id, err))
	}
}

func (h *handler) taskManagers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, TaskManagerList{TaskManagers: orEmpty(h.tms.TaskManagers())})
}

func writeJobNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s not found", id))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, ErrorBody{Errors: []string{msg}})
}

// writeJSON encodes v before writing the header, so an encoding failure can
// still answer 500. "<", ">" and "&" are written as is ("Map -> Sink"), as
// Flink does.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(ErrorBody{Errors: []string{"Encoding the response failed: " + err.Error()}})
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
