package rest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/rest"
)

// fakeSavepoints answers savepoint operations with fixed outcomes and
// records what it was asked.
type fakeSavepoints struct {
	fakeCluster
	got []rest.SavepointTrigger
}

func (f *fakeSavepoints) TriggerSavepoint(id string, t rest.SavepointTrigger) (string, error) {
	if id != runningID {
		return "", rest.ErrJobNotFound
	}
	f.got = append(f.got, t)
	return "aaaabbbbccccddddaaaabbbbccccdddd", nil
}

func (f *fakeSavepoints) SavepointStatus(id, rid string) (rest.AsyncOperationResult, error) {
	switch rid {
	case "running":
		return rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusInProgress}}, nil
	case "done":
		return rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusCompleted}, Operation: &rest.SavepointInfo{Location: "file:///sp/savepoint-012345-abc"}}, nil
	case "failed":
		return rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusCompleted}, Operation: &rest.SavepointInfo{
			FailureCause: &rest.SerializedThrowable{Class: "org.apache.flink.runtime.checkpoint.CheckpointException", StackTrace: "disk full"}}}, nil
	}
	return rest.AsyncOperationResult{}, &rest.StatusError{Status: http.StatusNotFound, Msg: "no such request " + rid}
}

// The savepoint routes speak Flink's shapes, at both prefixes.
func TestSavepointShapes(t *testing.T) {
	f := &fakeSavepoints{}
	srv := httptest.NewServer(rest.NewHandler(f))
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/jobs/" + runningID + "/savepoints", `{"target-directory":"/sp","cancel-job":false,"formatType":"NATIVE"}`, 202, `{"request-id":"aaaabbbbccccddddaaaabbbbccccdddd"}`},
		{"POST", "/v1/jobs/" + runningID + "/savepoints", ``, 202, `{"request-id":"aaaabbbbccccddddaaaabbbbccccdddd"}`},
		{"POST", "/jobs/" + runningID + "/stop", `{"targetDirectory":"/sp","drain":true}`, 202, `{"request-id":"aaaabbbbccccddddaaaabbbbccccdddd"}`},
		// Flink 2.3's client's bodies, exactly (triggerId null).
		{"POST", "/v1/jobs/" + runningID + "/savepoints", `{"target-directory":"/sp","cancel-job":false,"formatType":"CANONICAL","triggerId":null}`, 202, `"request-id"`},
		{"POST", "/v1/jobs/" + runningID + "/stop", `{"targetDirectory":"/sp","drain":false,"formatType":"CANONICAL","triggerId":null}`, 202, `"request-id"`},
		{"POST", "/jobs/" + runningID + "/savepoints", `{"target_directory":"/sp"}`, 400, `unknown field`},
		{"POST", "/jobs/" + runningID + "/savepoints", `{"formatType":"ZIP"}`, 400, `formatType`},
		{"POST", "/jobs/" + unknownID + "/savepoints", `{}`, 404, `Job ` + unknownID + ` not found`},
		{"GET", "/jobs/" + runningID + "/savepoints/running", ``, 200, `{"status":{"id":"IN_PROGRESS"},"operation":null}`},
		{"GET", "/v1/jobs/" + runningID + "/savepoints/done", ``, 200, `{"status":{"id":"COMPLETED"},"operation":{"location":"file:///sp/savepoint-012345-abc"}}`},
		{"GET", "/jobs/" + runningID + "/savepoints/failed", ``, 200, `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"org.apache.flink.runtime.checkpoint.CheckpointException","stack-trace":"disk full","serialized-throwable":""}}}`},
		{"GET", "/jobs/" + runningID + "/savepoints/nope", ``, 404, `no such request nope`},
		{"GET", "/jobs/" + runningID + "/stop", ``, 405, `not allowed`},
	}
	for _, c := range cases {
		status, body := call(c.method, c.path, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s: %d %s, want %d with %s", c.method, c.path, c.body, status, body, c.status, c.want)
		}
	}
	want := []rest.SavepointTrigger{{TargetDir: "/sp", Native: true}, {}, {TargetDir: "/sp", Stop: true, Drain: true},
		{TargetDir: "/sp"}, {TargetDir: "/sp", Stop: true}}
	if len(f.got) != len(want) {
		t.Fatalf("triggers %+v, want %+v", f.got, want)
	}
	for i := range want {
		if f.got[i] != want[i] {
			t.Errorf("trigger %d: %+v, want %+v", i, f.got[i], want[i])
		}
	}
}
