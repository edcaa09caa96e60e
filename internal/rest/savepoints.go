package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// SavepointOperator is optionally implemented by a Cluster. When it is, the
// handler serves Flink's asynchronous savepoint operations: POST
// /jobs/{jobid}/savepoints (trigger), POST /jobs/{jobid}/stop (stop with a
// savepoint), both answered {"request-id": ...}, and GET
// /jobs/{jobid}/savepoints/{triggerid} (poll).
type SavepointOperator interface {
	// TriggerSavepoint starts a savepoint (or, with Stop, a
	// stop-with-savepoint) and returns its request id. Errors are
	// *StatusError (the handler answers its status) or ErrJobNotFound.
	TriggerSavepoint(jobID string, req SavepointTrigger) (string, error)
	// SavepointStatus returns the state of a request, or a *StatusError /
	// ErrJobNotFound.
	SavepointStatus(jobID, requestID string) (AsyncOperationResult, error)
}

// SavepointTrigger is what the trigger and stop routes ask for.
type SavepointTrigger struct {
	TargetDir string
	Native    bool
	Stop      bool // stop with savepoint (POST /stop)
	Drain     bool
	Cancel    bool // cancel the job once the savepoint completed (cancel-job)
}

// StatusError is an error with the HTTP status the handler answers.
type StatusError struct {
	Status int
	Msg    string
}

func (e *StatusError) Error() string { return e.Msg }

// Savepoint formats (Flink's SavepointFormatType).
const (
	FormatCanonical = "CANONICAL"
	FormatNative    = "NATIVE"
)

// SavepointTriggerRequest is the body of POST /jobs/{jobid}/savepoints.
type SavepointTriggerRequest struct {
	TargetDirectory string `json:"target-directory,omitempty"`
	CancelJob       bool   `json:"cancel-job,omitempty"`
	FormatType      string `json:"formatType,omitempty"`
	TriggerID       string `json:"triggerId,omitempty"` // accepted, not used: Weir makes its own ids
}

// StopRequest is the body of POST /jobs/{jobid}/stop.
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory,omitempty"`
	Drain           bool   `json:"drain,omitempty"`
	FormatType      string `json:"formatType,omitempty"`
	TriggerID       string `json:"triggerId,omitempty"`
}

// TriggerResponse answers an asynchronous operation's trigger.
type TriggerResponse struct {
	RequestID string `json:"request-id"`
}

// Asynchronous operation states (Flink's QueueStatus.Id).
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// AsyncOperationResult is the body of GET /jobs/{jobid}/savepoints/{id}:
// Operation is null while in progress; once completed it holds the
// location, or the failure cause.
type AsyncOperationResult struct {
	Status    QueueStatus    `json:"status"`
	Operation *SavepointInfo `json:"operation"`
}

// QueueStatus is {"id": IN_PROGRESS|COMPLETED}.
type QueueStatus struct {
	ID string `json:"id"`
}

// SavepointInfo is a completed savepoint operation.
type SavepointInfo struct {
	Location     string               `json:"location,omitempty"`
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// SerializedThrowable is how Flink reports an exception in JSON.
type SerializedThrowable struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
	// SerializedThrowable is a Java-serialized exception in Flink; Weir
	// has none to give and leaves it empty.
	SerializedThrowable string `json:"serialized-throwable"`
}

// maxRequestBody bounds the JSON body of a trigger.
const maxRequestBody = 64 << 10

func (h *handler) savepointRoutes(routes map[string]byMethod) {
	if h.sps == nil {
		return
	}
	routes["/jobs/{jobid}/savepoints"] = byMethod{http.MethodPost: h.withJobID(h.triggerSavepoint)}
	routes["/jobs/{jobid}/savepoints/{triggerid}"] = byMethod{http.MethodGet: h.withJobID(h.savepointStatus)}
	routes["/jobs/{jobid}/stop"] = byMethod{http.MethodPost: h.withJobID(h.stopWithSavepoint)}
}

// readBody decodes an optional JSON body (empty is {}), refusing unknown
// fields so that a misspelled option is not silently ignored.
func readBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return fmt.Errorf("reading the request body: %v", err)
	}
	if len(b) > maxRequestBody {
		return fmt.Errorf("request body larger than %d bytes", maxRequestBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %v", err)
	}
	return nil
}

func parseFormat(f string) (native bool, err error) {
	switch strings.ToUpper(f) {
	case "", FormatCanonical:
		return false, nil
	case FormatNative:
		return true, nil
	}
	return false, fmt.Errorf("formatType %q: want %q or %q", f, FormatCanonical, FormatNative)
}

func (h *handler) triggerSavepoint(w http.ResponseWriter, r *http.Request, id string) {
	var req SavepointTriggerRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	native, err := parseFormat(req.FormatType)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.trigger(w, id, SavepointTrigger{TargetDir: req.TargetDirectory, Native: native, Cancel: req.CancelJob})
}

func (h *handler) stopWithSavepoint(w http.ResponseWriter, r *http.Request, id string) {
	var req StopRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	native, err := parseFormat(req.FormatType)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.trigger(w, id, SavepointTrigger{TargetDir: req.TargetDirectory, Native: native, Stop: true, Drain: req.Drain})
}

func (h *handler) trigger(w http.ResponseWriter, id string, t SavepointTrigger) {
	rid, err := h.sps.TriggerSavepoint(id, t)
	if err != nil {
		writeOperationError(w, id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, TriggerResponse{RequestID: rid})
}

func (h *handler) savepointStatus(w http.ResponseWriter, r *http.Request, id string) {
	res, err := h.sps.SavepointStatus(id, r.PathValue("triggerid"))
	if err != nil {
		writeOperationError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func writeOperationError(w http.ResponseWriter, id string, err error) {
	var se *StatusError
	switch {
	case errors.Is(err, ErrJobNotFound):
		writeJobNotFound(w, id)
	case errors.As(err, &se):
		writeError(w, se.Status, se.Msg)
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// TriggerSavepoint sends POST /jobs/:jobid/savepoints and returns the
// request id to poll with SavepointStatus.
func (c *Client) TriggerSavepoint(ctx context.Context, id string, req SavepointTriggerRequest) (string, error) {
	var tr TriggerResponse
	err := c.doJSON(ctx, http.MethodPost, "/jobs/"+url.PathEscape(id)+"/savepoints", req, &tr)
	return tr.RequestID, err
}

// StopWithSavepoint sends POST /jobs/:jobid/stop and returns the request id
// to poll with SavepointStatus.
func (c *Client) StopWithSavepoint(ctx context.Context, id string, req StopRequest) (string, error) {
	var tr TriggerResponse
	err := c.doJSON(ctx, http.MethodPost, "/jobs/"+url.PathEscape(id)+"/stop", req, &tr)
	return tr.RequestID, err
}

// SavepointStatus fetches GET /jobs/:jobid/savepoints/:requestid.
func (c *Client) SavepointStatus(ctx context.Context, id, requestID string) (AsyncOperationResult, error) {
	var res AsyncOperationResult
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id)+"/savepoints/"+url.PathEscape(requestID), &res)
	return res, err
}

// doJSON sends one request with body as JSON and decodes a 2xx answer
// into out, as do.
func (c *Client) doJSON(ctx context.Context, method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("weir rest: %w", err)
	}
	return c.send(ctx, method, path, b, out)
}
