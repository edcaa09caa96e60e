package rest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/rest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the handler's answers")

// testNow is what the manual clock reads; it shows up as "now" in job details.
const testNow = 1_700_000_005_000

func newTestHandler(c rest.Cluster) http.Handler {
	return rest.NewHandler(c, rest.WithVersion("0.1.0", "abc1234"), rest.WithClock(clock.NewManual(testNow)))
}

// serve runs one request against h and returns the recorder.
func serve(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	return rec
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return v
}

// TestGolden checks every endpoint's answer against testdata, field names and
// values both, with and without the /v1 prefix. The golden files were
// reviewed against Flink's REST documentation; regenerate with -update only
// on purpose.
func TestGolden(t *testing.T) {
	h := newTestHandler(&fakeWithTMs{})
	cases := []struct{ path, golden string }{
		{"/config", "config.json"},
		{"/overview", "overview.json"},
		{"/jobs", "jobs.json"},
		{"/jobs/overview", "jobs_overview.json"},
		{"/jobs/" + runningID, "job_running.json"},
		{"/jobs/" + failedID, "job_failed.json"},
		{"/jobs/" + runningID + "/exceptions", "exceptions_none.json"},
		{"/jobs/" + failedID + "/exceptions", "exceptions_failed.json"},
		{"/taskmanagers", "taskmanagers.json"},
	}
	for _, tc := range cases {
		for _, prefix := range []string{"", "/v1"} {
			t.Run(prefix+tc.path, func(t *testing.T) {
				rec := serve(t, h, http.MethodGet, prefix+tc.path)
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d, body %s", rec.Code, rec.Body)
				}
				file := filepath.Join("testdata", tc.golden)
				if *update && prefix == "" {
					var pretty bytes.Buffer
					if err := json.Indent(&pretty, rec.Body.Bytes(), "", "  "); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if got, w := decode(t, rec.Body.Bytes()), decode(t, want); !reflect.DeepEqual(got, w) {
					t.Errorf("answer differs from %s\ngot:  %s\nwant: %s", file, rec.Body, want)
				}
			})
		}
	}
}

// keysOf returns the sorted keys of the JSON object at path (a list of keys;
// an int index steps into an array).
func keysOf(t *testing.T, v any, path ...any) []string {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v: not an object: %v", path, v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// TestFlinkFieldNames pins the key sets to Flink's names, independently of
// the golden files, so a renamed json tag cannot slip through an -update.
func TestFlinkFieldNames(t *testing.T) {
	h := newTestHandler(&fakeWithTMs{})
	get := func(path string) any { return decode(t, serve(t, h, http.MethodGet, path).Body.Bytes()) }

	ov := get("/overview")
	check := func(name string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s keys\ngot  %q\nwant %q", name, got, want)
		}
	}
	check("overview", keysOf(t, ov), sorted("taskmanagers", "slots-total", "slots-available",
		"jobs-running", "jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version", "flink-commit"))
	check("jobs[0]", keysOf(t, get("/jobs"), "jobs", 0), sorted("id", "status"))
	jo := get("/jobs/overview")
	// Flink's client parses these with JobDetails' JSON creator, which needs
	// pending-operators (`flink list` retried forever without it).
	check("jobs/overview[0]", keysOf(t, jo, "jobs", 0), sorted("jid", "name", "state", "jobType", "start-time",
		"end-time", "duration", "last-modification", "tasks", "pending-operators"))
	check("jobs/overview[0].tasks", keysOf(t, jo, "jobs", 0, "tasks"), sorted("total", "created",
		"scheduled", "deploying", "initializing", "running", "finished", "canceling", "canceled", "failed", "reconciling"))

	jd := get("/jobs/" + runningID)
	// job-type, pending-operators, slotSharingGroupId and
	// optimizer_properties: Flink 2.3's client cannot parse the answer
	// without the last three (it has job-type too).
	check("job", keysOf(t, jd), sorted("jid", "name", "isStoppable", "state", "job-type", "start-time", "end-time",
		"duration", "maxParallelism", "now", "timestamps", "vertices", "status-counts", "plan", "pending-operators"))
	taskStates := sorted("CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING")
	check("job.status-counts", keysOf(t, jd, "status-counts"), taskStates)
	check("vertex", keysOf(t, jd, "vertices", 0), sorted("id", "slotSharingGroupId", "name", "maxParallelism", "parallelism",
		"status", "start-time", "end-time", "duration", "tasks", "metrics"))
	check("vertex.tasks", keysOf(t, jd, "vertices", 0, "tasks"), taskStates)
	check("vertex.metrics", keysOf(t, jd, "vertices", 0, "metrics"), sorted("read-bytes", "read-bytes-complete",
		"write-bytes", "write-bytes-complete", "read-records", "read-records-complete", "write-records",
		"write-records-complete", "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"))
	check("plan", keysOf(t, jd, "plan"), sorted("jid", "name", "type", "nodes"))
	check("plan source node", keysOf(t, jd, "plan", "nodes", 0), sorted("id", "parallelism", "operator",
		"operator_strategy", "description", "optimizer_properties"))
	check("plan node", keysOf(t, jd, "plan", "nodes", 1), sorted("id", "parallelism", "operator",
		"operator_strategy", "description", "optimizer_properties", "inputs"))
	check("plan input", keysOf(t, jd, "plan", "nodes", 1, "inputs", 0), sorted("num", "id", "ship_strategy", "exchange"))

	ex := get("/jobs/" + failedID + "/exceptions")
	check("exceptions", keysOf(t, ex), sorted("root-exception", "timestamp", "all-exceptions", "truncated", "exceptionHistory"))
	check("all-exceptions[0]", keysOf(t, ex, "all-exceptions", 0), sorted("exception", "task", "location", "timestamp", "taskManagerId"))
	check("exceptionHistory", keysOf(t, ex, "exceptionHistory"), sorted("entries", "truncated"))
	check("exceptionHistory entry", keysOf(t, ex, "exceptionHistory", "entries", 0),
		sorted("exceptionName", "stacktrace", "timestamp", "taskName", "location"))

	cfg := get("/config")
	check("config", keysOf(t, cfg), sorted("refresh-interval", "timezone-name", "timezone-offset",
		"flink-version", "flink-revision", "features"))
	check("config.features", keysOf(t, cfg, "features"), sorted("web-submit", "web-cancel", "web-rescale", "web-history"))
}

func TestErrors(t *testing.T) {
	h := newTestHandler(&fakeCluster{}) // no TaskManagerLister
	cases := []struct {
		method, path string
		status       int
		msg          string // substring of the only error message
		allow        string
	}{
		{"GET", "/jobs/" + unknownID, 404, "Job " + unknownID + " not found", ""},
		{"GET", "/v1/jobs/" + unknownID, 404, "Job " + unknownID + " not found", ""},
		{"GET", "/jobs/" + unknownID + "/exceptions", 404, "Job " + unknownID + " not found", ""},
		{"PATCH", "/jobs/" + unknownID + "?mode=cancel", 404, "Job " + unknownID + " not found", ""},
		{"GET", "/jobs/nope", 400, `Malformed job id "nope"`, ""},
		{"GET", "/jobs/" + strings.ToUpper(runningID), 400, "Malformed job id", ""},
		{"GET", "/jobs/" + runningID + "0", 400, "Malformed job id", ""},
		{"GET", "/v1/jobs/xyz/exceptions", 400, "Malformed job id", ""},
		{"PATCH", "/jobs/nope?mode=cancel", 400, "Malformed job id", ""},
		{"PATCH", "/jobs/" + runningID + "?mode=stop", 400, `Unsupported termination mode "stop"`, ""},
		{"POST", "/jobs", 405, "Method POST not allowed for /jobs", "GET, HEAD"},
		{"DELETE", "/jobs/" + runningID, 405, "Method DELETE not allowed", "GET, HEAD, PATCH"},
		{"PATCH", "/overview", 405, "Method PATCH not allowed", "GET, HEAD"},
		{"PUT", "/v1/config", 405, "Method PUT not allowed", "GET, HEAD"},
		{"GET", "/nope", 404, "Not found: /nope", ""},
		{"GET", "/v1/nope", 404, "Not found: /v1/nope", ""},
		{"GET", "/jobs/" + runningID + "/vertices", 404, "Not found", ""},
		{"GET", "/taskmanagers", 404, "Not found: /taskmanagers", ""},
		{"PATCH", "/jobs/" + brokenID, 500, "Cancelling job " + brokenID + " failed: mailbox full", ""},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := serve(t, h, tc.method, tc.path)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			var eb rest.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || len(eb.Errors) != 1 {
				t.Fatalf("want {\"errors\":[msg]}, got %s (%v)", rec.Body, err)
			}
			if !strings.Contains(eb.Errors[0], tc.msg) {
				t.Errorf("message %q does not contain %q", eb.Errors[0], tc.msg)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			// Only the documented shape: one "errors" key.
			if keys := keysOf(t, decode(t, rec.Body.Bytes())); !slices.Equal(keys, []string{"errors"}) {
				t.Errorf("error body keys %q", keys)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	f := &fakeCluster{}
	h := newTestHandler(f)
	for _, path := range []string{
		"/jobs/" + runningID + "?mode=cancel",
		"/v1/jobs/" + runningID,              // no mode cancels too
		"/jobs/" + failedID + "?mode=cancel", // terminal: still 202
	} {
		rec := serve(t, h, http.MethodPatch, path)
		if rec.Code != http.StatusAccepted {
			t.Errorf("PATCH %s: status %d, body %s", path, rec.Code, rec.Body)
		}
		if got := strings.TrimSpace(rec.Body.String()); got != "{}" {
			t.Errorf("PATCH %s: body %q, want {}", path, got)
		}
	}
	if got, want := f.cancelledIDs(), []string{runningID, runningID, failedID}; !slices.Equal(got, want) {
		t.Errorf("Cancel calls %q, want %q", got, want)
	}
	// A rejected mode or malformed id never reaches the cluster.
	serve(t, h, http.MethodPatch, "/jobs/"+runningID+"?mode=stop")
	serve(t, h, http.MethodPatch, "/jobs/NOPE")
	if n := len(f.cancelledIDs()); n != 3 {
		t.Errorf("%d Cancel calls after rejected requests, want 3", n)
	}
}

func TestHeadServedWhereGetIs(t *testing.T) {
	srv := httptest.NewServer(newTestHandler(&fakeCluster{}))
	defer srv.Close()
	resp, err := http.Head(srv.URL + "/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD /overview: %d, %d body bytes", resp.StatusCode, len(body))
	}
}

// sharedCluster returns the same JobDetails value every time, with nil maps,
// the way a cluster serving a cached snapshot would; the handler must not
// write into it. Run with -race.
type sharedCluster struct {
	fakeCluster
	d rest.JobDetails
}

func (s *sharedCluster) Job(id string) (rest.JobDetails, bool) { return s.d, id == runningID }

func TestHandlerDoesNotWriteIntoClusterData(t *testing.T) {
	d := runningJob()
	for i := range d.Vertices {
		d.Vertices[i].Tasks = nil
	}
	c := &sharedCluster{d: d}
	h := newTestHandler(c)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				rec := serve(t, h, http.MethodGet, "/jobs/"+runningID)
				if rec.Code != http.StatusOK {
					t.Errorf("status %d", rec.Code)
				}
			}
		})
	}
	wg.Wait()
	for _, v := range c.d.Vertices {
		if v.Tasks != nil {
			t.Fatalf("handler wrote into the cluster's vertex %s", v.ID)
		}
	}
}
