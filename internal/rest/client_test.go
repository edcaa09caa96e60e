package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/rest"
)

// newTestClient serves a fakeWithTMs and returns a client for it and the fake.
func newTestClient(t *testing.T) (*rest.Client, *fakeWithTMs) {
	t.Helper()
	f := &fakeWithTMs{}
	srv := httptest.NewServer(newTestHandler(f))
	t.Cleanup(srv.Close)
	return rest.NewClient(srv.URL+"/", srv.Client()), f
}

func TestClientRoundTrips(t *testing.T) {
	c, f := newTestClient(t)
	ctx := context.Background()

	ov, err := c.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := f.Overview()
	want.FlinkVersion, want.FlinkCommit = "0.1.0", "abc1234"
	if ov != want {
		t.Errorf("Overview = %+v, want %+v", ov, want)
	}

	jobs, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jobs, f.Jobs()) {
		t.Errorf("Jobs = %+v, want %+v", jobs, f.Jobs())
	}

	jo, err := c.JobsOverview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jo) != 2 || jo[0] != rest.OverviewOf(runningJob()) || jo[1] != rest.OverviewOf(failedJob()) {
		t.Errorf("JobsOverview = %+v", jo)
	}

	d, err := c.Job(ctx, runningID)
	if err != nil {
		t.Fatal(err)
	}
	wantD := runningJob()
	wantD.Now = testNow
	wantD.Plan.ID, wantD.Plan.Name, wantD.Plan.Type = runningID, "wordcount", rest.PlanTypeStreaming
	// What the handler adds for Flink's client: one slot-sharing group id
	// (32 hex characters) for all vertices, {} optimizer properties.
	wantD.JobType = rest.JobTypeStreaming
	if len(d.Vertices) == 0 || !rest.ValidJobID(d.Vertices[0].SlotSharingGroupID) {
		t.Fatalf("vertices without a 32-hex slot sharing group id: %+v", d.Vertices)
	}
	for i := range wantD.Vertices {
		wantD.Vertices[i].SlotSharingGroupID = d.Vertices[0].SlotSharingGroupID
	}
	for i := range wantD.Plan.Nodes {
		wantD.Plan.Nodes[i].OptimizerProperties = json.RawMessage(`{}`)
	}
	if !reflect.DeepEqual(d, wantD) {
		t.Errorf("Job =\n%+v\nwant\n%+v", d, wantD)
	}

	ex, err := c.Exceptions(ctx, failedID)
	if err != nil {
		t.Fatal(err)
	}
	wantEx, _ := f.Exceptions(failedID)
	if !reflect.DeepEqual(ex, wantEx) {
		t.Errorf("Exceptions = %+v, want %+v", ex, wantEx)
	}

	tms, err := c.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tms, f.TaskManagers()) {
		t.Errorf("TaskManagers = %+v", tms)
	}

	if err := c.Cancel(ctx, runningID); err != nil {
		t.Fatal(err)
	}
	if got := f.cancelledIDs(); len(got) != 1 || got[0] != runningID {
		t.Errorf("cancelled %q", got)
	}
}

func TestClientErrors(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()

	_, err := c.Job(ctx, unknownID)
	var apiErr *rest.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("Job(unknown) = %v, want a 404 *APIError", err)
	}
	if !errors.Is(err, rest.ErrJobNotFound) {
		t.Errorf("errors.Is(%v, ErrJobNotFound) = false", err)
	}
	for _, s := range []string{"404", "Job " + unknownID + " not found"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}

	err = c.Cancel(ctx, unknownID)
	if !errors.Is(err, rest.ErrJobNotFound) {
		t.Errorf("Cancel(unknown) = %v, want ErrJobNotFound", err)
	}

	err = c.Cancel(ctx, "not-a-job")
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "Malformed job id") {
		t.Errorf("Cancel(malformed) = %v, want 400 Malformed job id", err)
	}
	if errors.Is(err, rest.ErrJobNotFound) {
		t.Errorf("a 400 must not read as ErrJobNotFound")
	}

	err = c.Cancel(ctx, brokenID)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusInternalServerError ||
		!strings.Contains(err.Error(), "mailbox full") {
		t.Errorf("Cancel(broken) = %v, want 500 naming the cause", err)
	}
}

func TestClientNonJSONError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway from a proxy", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := rest.NewClient(srv.URL, srv.Client()).Overview(context.Background())
	var apiErr *rest.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway ||
		!strings.Contains(err.Error(), "bad gateway from a proxy") {
		t.Errorf("Overview = %v, want a 502 *APIError with the body", err)
	}
}

func TestClientNoCluster(t *testing.T) {
	// Take a free port, then close it so nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	_, err = rest.NewClient(addr, nil).Jobs(context.Background()) // bare host:port means http
	if !errors.Is(err, rest.ErrNoCluster) {
		t.Fatalf("Jobs = %v, want ErrNoCluster", err)
	}
	if want := "no Weir cluster answered at http://" + addr; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestClientContextCanceled(t *testing.T) {
	c, _ := newTestClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Overview(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Overview(canceled ctx) = %v, want context.Canceled", err)
	}
}

// TestClientFollowsStandby: a standby JobManager answers 503 with the
// leader's REST API in Location; the client asks the leader instead, once,
// and reports a standby that names nobody (or only itself) as an error.
func TestClientFollowsStandby(t *testing.T) {
	leader := httptest.NewServer(newTestHandler(&fakeWithTMs{}))
	defer leader.Close()
	standby := func(location string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if location != "" {
				w.Header().Set("Location", location+r.URL.RequestURI())
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string][]string{"errors": {"this JobManager is a standby"}})
		}))
	}
	ctx := context.Background()
	s := standby(leader.URL)
	defer s.Close()
	if _, err := rest.NewClient(s.URL, nil).Overview(ctx); err != nil {
		t.Fatalf("through a standby naming the leader: %v", err)
	}
	// Two standbys naming each other: one hop, then the error.
	var other *httptest.Server
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", other.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer first.Close()
	other = standby(first.URL)
	defer other.Close()
	var ae *rest.APIError
	if _, err := rest.NewClient(first.URL, nil).Overview(ctx); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("between two standbys: %v, want the 503", err)
	}
	lone := standby("")
	defer lone.Close()
	if _, err := rest.NewClient(lone.URL, nil).Overview(ctx); !errors.As(err, &ae) || !strings.Contains(err.Error(), "standby") {
		t.Fatalf("a standby naming nobody: %v, want its 503", err)
	}
}
