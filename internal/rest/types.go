package rest

import (
	"encoding/json"
	"errors"
	"github.com/weirhq/weir/internal/protocol"
)

// ErrJobNotFound is returned by Cluster.Cancel for a job id the cluster does not
// know. The handler answers 404 for it. On the client side, errors.Is(err,
// ErrJobNotFound) holds for any *APIError with status 404.
var ErrJobNotFound = errors.New("job not found")

// Cluster is what the REST API needs from the JobManager. Each method returns a
// snapshot; the handler never holds on to it past the request. Implementations
// must be safe for concurrent use: requests are served in parallel.
type Cluster interface {
	// Overview summarizes the cluster. FlinkVersion and FlinkCommit may be left
	// empty; the handler fills them from its options.
	Overview() Overview
	// Jobs lists every job the cluster knows, running or terminal. The handler
	// builds GET /jobs/overview from it and Job, so there is no separate
	// overview method to keep consistent.
	Jobs() []JobSummary
	// Job returns the details of one job, or false if the id is unknown.
	Job(id string) (JobDetails, bool)
	// Exceptions returns the failures of one job, or false if the id is unknown.
	Exceptions(id string) (JobExceptions, bool)
	// Cancel asks a job to cancel and returns without waiting for it. It
	// returns ErrJobNotFound for an unknown id, and nil for a job that is
	// already terminal (Flink answers 202 anyway).
	Cancel(id string) error
}

// TaskManagerLister is optionally implemented by a Cluster. When it is, the
// handler serves GET /taskmanagers; otherwise that path answers 404.
type TaskManagerLister interface {
	TaskManagers() []TaskManager
}

// Overview is the body of GET /overview.
type Overview struct {
	TaskManagers   int    `json:"taskmanagers"`
	SlotsTotal     int    `json:"slots-total"`
	SlotsAvailable int    `json:"slots-available"`
	JobsRunning    int    `json:"jobs-running"`
	JobsFinished   int    `json:"jobs-finished"`
	JobsCancelled  int    `json:"jobs-cancelled"`
	JobsFailed     int    `json:"jobs-failed"`
	FlinkVersion   string `json:"flink-version"` // Weir's version
	FlinkCommit    string `json:"flink-commit"`  // Weir's commit
}

// JobOverview is one entry of GET /jobs/overview. The handler derives it from
// JobDetails (see OverviewOf). Times are milliseconds since the epoch; EndTime
// is -1 while the job is not terminal.
//
// Flink's own client (RestClusterClient.listJobs, behind `flink list`) reads
// this as its JobDetails class, whose JSON creator needs every field here:
// a missing number such as pending-operators fails the parse, and the CLI
// then retries the request until its timeout, printing nothing.
type JobOverview struct {
	ID    string            `json:"jid"`
	Name  string            `json:"name"`
	State protocol.JobState `json:"state"`
	// JobType is JobTypeStreaming; Flink also has BATCH.
	JobType          string     `json:"jobType"`
	StartTime        int64      `json:"start-time"`
	EndTime          int64      `json:"end-time"`
	Duration         int64      `json:"duration"`
	LastModification int64      `json:"last-modification"`
	Tasks            TaskCounts `json:"tasks"`
	// PendingOperators counts operators not yet turned into job vertices:
	// Flink 2's adaptive batch scheduler builds its graph as it goes. Weir
	// builds the whole graph at submission, so it is always 0, but Flink's
	// client requires the field.
	PendingOperators int `json:"pending-operators"`
}

// JobTypeStreaming is the only JobOverview.JobType Weir produces.
const JobTypeStreaming = "STREAMING"

// JobSummary is one entry of GET /jobs.
type JobSummary struct {
	ID     string            `json:"id"`
	Status protocol.JobState `json:"status"`
}

// JobList is the body of GET /jobs.
type JobList struct {
	Jobs []JobSummary `json:"jobs"`
}

// JobOverviewList is the body of GET /jobs/overview.
type JobOverviewList struct {
	Jobs []JobOverview `json:"jobs"`
}

// TaskCounts counts a job's subtasks per state, with Flink's lowercase keys, as
// GET /jobs/overview shows them. Total is the number of subtasks.
type TaskCounts struct {
	Total     int `json:"total"`
	Created   int `json:"created"`
	Scheduled int `json:"scheduled"`
	Deploying int `json:"deploying"`
	// Initializing: restoring state and opening operators.
	Initializing int `json:"initializing"`
	Running      int `json:"running"`
	Finished     int `json:"finished"`
	Canceling    int `json:"canceling"`
	Canceled     int `json:"canceled"`
	Failed       int `json:"failed"`
	// Reconciling is always 0: Flink uses it for a JobManager that takes
	// over running tasks after a failover, which Weir does not do. It is
	// here so the map has every one of Flink's ExecutionState names, as
	// Flink's own answer does.
	Reconciling int `json:"reconciling"`
}

// JobDetails is the body of GET /jobs/:jobid.
type JobDetails struct {
	ID          string            `json:"jid"`
	Name        string            `json:"name"`
	IsStoppable bool              `json:"isStoppable"`
	State       protocol.JobState `json:"state"`
	// JobType is JobTypeStreaming; left empty, the handler fills it.
	JobType        string `json:"job-type"`
	StartTime      int64  `json:"start-time"`
	EndTime        int64  `json:"end-time"` // -1 while not terminal
	Duration       int64  `json:"duration"`
	MaxParallelism int    `json:"maxParallelism"` // -1 if not set job-wide, as in Flink
	// Now is the server time of the snapshot; left zero, the handler fills it.
	Now int64 `json:"now"`
	// Timestamps holds when the job entered each state it has been in.
	Timestamps map[protocol.JobState]int64 `json:"timestamps"`
	Vertices   []Vertex                    `json:"vertices"`
	// StatusCounts counts vertices (not subtasks) per aggregate state; see
	// CountStates and AggregateVertexState.
	StatusCounts map[protocol.TaskState]int `json:"status-counts"`
	Plan         Plan                       `json:"plan"`
	// PendingOperators is always 0 (see JobOverview.PendingOperators);
	// Flink's client needs the field to parse this answer.
	PendingOperators int `json:"pending-operators"`
}

// Vertex is one job vertex (an operator chain) in JobDetails.
type Vertex struct {
	ID string `json:"id"`
	// SlotSharingGroupID is Flink's id (32 hex characters) of the group of
	// vertices whose subtasks share slots. Weir puts every vertex of a job
	// in one group, as Flink's default does; left empty, the handler fills
	// it with an id derived from the job id. Flink's client cannot parse a
	// vertex without it.
	SlotSharingGroupID string             `json:"slotSharingGroupId"`
	Name               string             `json:"name"`
	MaxParallelism     int                `json:"maxParallelism"`
	Parallelism        int                `json:"parallelism"`
	Status             protocol.TaskState `json:"status"` // AggregateVertexState of Tasks
	StartTime          int64              `json:"start-time"`
	EndTime            int64              `json:"end-time"` // -1 while not terminal
	Duration           int64              `json:"duration"`
	// Tasks counts the vertex's subtasks per state, every state present.
	Tasks   map[protocol.TaskState]int `json:"tasks"`
	Metrics VertexMetrics              `json:"metrics"`
}

// VertexMetrics are a vertex's counters summed over its subtasks. The
// *Complete flags say whether every subtask reported. Times are milliseconds.
type VertexMetrics struct {
	ReadBytes                    int64 `json:"read-bytes"`
	ReadBytesComplete            bool  `json:"read-bytes-complete"`
	WriteBytes                   int64 `json:"write-bytes"`
	WriteBytesComplete           bool  `json:"write-bytes-complete"`
	ReadRecords                  int64 `json:"read-records"`
	ReadRecordsComplete          bool  `json:"read-records-complete"`
	WriteRecords                 int64 `json:"write-records"`
	WriteRecordsComplete         bool  `json:"write-records-complete"`
	AccumulatedBackpressuredTime int64 `json:"accumulated-backpressured-time"`
	AccumulatedIdleTime          int64 `json:"accumulated-idle-time"`
	AccumulatedBusyTime          int64 `json:"accumulated-busy-time"`
}

// PlanTypeStreaming is the only Plan.Type Weir produces.
const PlanTypeStreaming = "STREAMING"

// Plan is the job graph as the dashboard draws it.
type Plan struct {
	ID    string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"` // PlanTypeStreaming; left empty, the handler fills it
	Nodes []PlanNode `json:"nodes"`
}

// PlanNode is one vertex in the plan. Sources have no Inputs; the key is then
// absent, as in Flink.
type PlanNode struct {
	ID               string `json:"id"`
	Parallelism      int    `json:"parallelism"`
	Operator         string `json:"operator"`
	OperatorStrategy string `json:"operator_strategy"`
	Description      string `json:"description"`
	// OptimizerProperties is a JSON object, {} in Weir (Flink's batch
	// optimizer filled it). Left nil, the handler writes {}: Flink's client
	// cannot parse a node without it.
	OptimizerProperties json.RawMessage `json:"optimizer_properties"`
	Inputs              []PlanInput     `json:"inputs,omitempty"`
}

// PlanInput is an edge into a PlanNode. ShipStrategy is Flink's partitioner
// name (FORWARD, HASH, REBALANCE, RESCALE, BROADCAST); Exchange is
// "pipelined_bounded" for streaming edges.
type PlanInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// JobExceptions is the body of GET /jobs/:jobid/exceptions. RootException and
// Timestamp are absent when the job never failed.
type JobExceptions struct {
	RootException    string           `json:"root-exception,omitempty"`
	Timestamp        int64            `json:"timestamp,omitempty"`
	AllExceptions    []TaskException  `json:"all-exceptions"`
	Truncated        bool             `json:"truncated"`
	ExceptionHistory ExceptionHistory `json:"exceptionHistory"`
}

// TaskException is one entry of JobExceptions.AllExceptions: a failure of one
// subtask. Task names the subtask ("Map -> Sink (2/4)"), Location where it ran.
type TaskException struct {
	Exception     string `json:"exception"`
	Task          string `json:"task"`
	Location      string `json:"location"`
	Timestamp     int64  `json:"timestamp"`
	TaskManagerID string `json:"taskManagerId"`
}

// ExceptionHistory lists past failures, newest first.
type ExceptionHistory struct {
	Entries   []ExceptionEntry `json:"entries"`
	Truncated bool             `json:"truncated"`
}

// ExceptionEntry is one failure in the history. TaskName and Location are
// absent for a job-wide (global) failure.
type ExceptionEntry struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	Timestamp     int64  `json:"timestamp"`
	TaskName      string `json:"taskName,omitempty"`
	Location      string `json:"location,omitempty"`
}

// Config is the body of GET /config, which the dashboard reads first.
type Config struct {
	RefreshInterval int64    `json:"refresh-interval"` // ms between dashboard polls
	TimezoneName    string   `json:"timezone-name"`
	TimezoneOffset  int64    `json:"timezone-offset"` // ms east of UTC
	FlinkVersion    string   `json:"flink-version"`
	FlinkRevision   string   `json:"flink-revision"`
	Features        Features `json:"features"`
}

// Features tells the dashboard which actions to offer.
type Features struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// TaskManager is one entry of GET /taskmanagers.
type TaskManager struct {
	ID                     string `json:"id"`
	Path                   string `json:"path"`
	DataPort               int    `json:"dataPort"`
	JmxPort                int    `json:"jmxPort"`
	TimeSinceLastHeartbeat int64  `json:"timeSinceLastHeartbeat"` // ms since epoch of the last heartbeat, as Flink
	SlotsNumber            int    `json:"slotsNumber"`
	FreeSlots              int    `json:"freeSlots"`
}

// TaskManagerList is the body of GET /taskmanagers.
type TaskManagerList struct {
	TaskManagers []TaskManager `json:"taskmanagers"`
}

// ErrorBody is the body of every error answer: {"errors": ["..."]}.
type ErrorBody struct {
	Errors []string `json:"errors"`
}
