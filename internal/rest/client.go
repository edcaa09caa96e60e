package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client limits.
const (
	// DefaultClientTimeout bounds each request when NewClient gets no client.
	DefaultClientTimeout = 10 * time.Second
	// maxResponseBytes bounds how much of an answer the client reads.
	maxResponseBytes = 16 << 20
)

// ErrNoCluster is wrapped by errors from a request that reached no server at
// all (connection refused, unknown host, dial timeout).
var ErrNoCluster = errors.New("no Weir cluster answered")

// APIError is an answer with a non-2xx status. Messages are the server's
// "errors" array, or a short excerpt of the body if it was not one.
type APIError struct {
	Status   int
	Messages []string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("weir rest: %d %s: %s",
		e.Status, http.StatusText(e.Status), strings.Join(e.Messages, "; "))
}

// Is makes errors.Is(err, ErrJobNotFound) hold for a 404 answer.
func (e *APIError) Is(target error) bool {
	return target == ErrJobNotFound && e.Status == http.StatusNotFound
}

// Client calls a Weir (or Flink) REST API. It is safe for concurrent use.
type Client struct {
	base string // scheme://host[:port][/path], no trailing slash
	hc   *http.Client
	// followed: this client asks the leader a standby named, and does not
	// follow another (two standbys naming each other while a leader
	// changes would bounce).
	followed bool
}

// NewClient returns a client for the REST API at baseURL, such as
// "http://127.0.0.1:8081"; a bare "host:port" means http. A nil hc uses a
// client with DefaultClientTimeout.
func NewClient(baseURL string, hc *http.Client) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultClientTimeout}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Overview fetches GET /overview.
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	var ov Overview
	err := c.do(ctx, http.MethodGet, "/overview", &ov)
	return ov, err
}

// Jobs fetches GET /jobs: every job's id and status.
func (c *Client) Jobs(ctx context.Context) ([]JobSummary, error) {
	var l JobList
	err := c.do(ctx, http.MethodGet, "/jobs", &l)
	return l.Jobs, err
}

// JobsOverview fetches GET /jobs/overview: every job with name, times and
// subtask counts.
func (c *Client) JobsOverview(ctx context.Context) ([]JobOverview, error) {
	var l JobOverviewList
	err := c.do(ctx, http.MethodGet, "/jobs/overview", &l)
	return l.Jobs, err
}

// Job fetches GET /jobs/:jobid. An unknown job gives an error for which
// errors.Is(err, ErrJobNotFound) holds.
func (c *Client) Job(ctx context.Context, id string) (JobDetails, error) {
	var d JobDetails
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id), &d)
	return d, err
}

// WaitAllRunning polls the job until every vertex of it runs (a savepoint
// triggered before is declined, as Flink declines one while not all tasks
// run), or ctx ends.
func (c *Client) WaitAllRunning(ctx context.Context, id string) error {
	for {
		d, err := c.Job(ctx, id)
		if err != nil {
			return err
		}
		running := d.State == protocol.JobRunning && len(d.Vertices) > 0
		for _, v := range d.Vertices {
			running = running && v.Status == protocol.TaskRunning
		}
		if running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s: not all its tasks run (job %s): %w", id, d.State, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Watermarks fetches GET /jobs/:jobid/vertices/:vertexid/watermarks.
func (c *Client) Watermarks(ctx context.Context, id, vertexID string) ([]Metric, error) {
	var ms []Metric
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id)+"/vertices/"+url.PathEscape(vertexID)+"/watermarks", &ms)
	return ms, err
}

// Exceptions fetches GET /jobs/:jobid/exceptions.
func (c *Client) Exceptions(ctx context.Context, id string) (JobExceptions, error) {
	var ex JobExceptions
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id)+"/exceptions", &ex)
	return ex, err
}

// Cancel sends PATCH /jobs/:jobid?mode=cancel. It returns once the cluster
// has accepted the request, not when the job has stopped; poll Job for that.
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPatch, "/jobs/"+url.PathEscape(id)+"?mode=cancel", nil)
}

// TaskManagers fetches GET /taskmanagers.
// VertexDetails returns where each subtask of a job's vertex runs.
func (c *Client) VertexDetails(ctx context.Context, id, vertexID string) (VertexDetails, error) {
	var d VertexDetails
	err := c.do(ctx, http.MethodGet, "/jobs/"+id+"/vertices/"+vertexID, &d)
	return d, err
}

func (c *Client) TaskManagers(ctx context.Context) ([]TaskManager, error) {
	var l TaskManagerList
	err := c.do(ctx, http.MethodGet, "/taskmanagers", &l)
	return l.TaskManagers, err
}

// do sends one request and decodes a 2xx body into out (if non-nil).
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.send(ctx, method, path, nil, out)
}

// send sends one request, with body as its JSON content when non-nil, and
// decodes a 2xx answer into out (if non-nil).
func (c *Client) send(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("weir rest: %w", err)
	}
	req.Header.Set("Accept", contentType)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isDialError(err) {
			return fmt.Errorf("%w at %s: %w", ErrNoCluster, c.base, err)
		}
		return fmt.Errorf("weir rest: %s %s: %w", method, c.base+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("weir rest: %s %s: reading answer: %w", method, c.base+path, err)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("weir rest: %s %s: answer larger than %d bytes", method, c.base+path, maxResponseBytes)
	}
	if leader := standbyLeader(resp, c.base); leader != "" && !c.followed {
		// A standby JobManager (high availability) names the leader's
		// REST API: ask it instead, once.
		return (&Client{base: leader, hc: c.hc, followed: true}).send(ctx, method, path, body, out)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return apiError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("weir rest: %s %s: decoding answer: %w", method, c.base+path, err)
	}
	return nil
}

// apiError builds the error for a non-2xx answer.
func apiError(status int, body []byte) *APIError {
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err == nil && len(eb.Errors) > 0 {
		return &APIError{Status: status, Messages: eb.Errors}
	}
	const maxExcerpt = 200
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxExcerpt {
		msg = msg[:maxExcerpt] + "..."
	}
	if msg == "" {
		msg = "(empty body)"
	}
	return &APIError{Status: status, Messages: []string{msg}}
}

// isDialError reports whether err means no connection was made.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// standbyLeader returns the base URL of the leader's REST API that a
// standby JobManager's answer names (503 with a Location of another
// host), or "".
func standbyLeader(resp *http.Response, base string) string {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return ""
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Host == "" || (loc.Scheme != "http" && loc.Scheme != "https") {
		return ""
	}
	leader := loc.Scheme + "://" + loc.Host
	if leader == base {
		return ""
	}
	return leader
}
