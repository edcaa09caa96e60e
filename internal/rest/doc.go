// Package rest serves a minimal, Flink-shaped REST API for a Weir cluster and
// holds the Go client the CLI uses to talk to it.
//
// It owns three things:
//   - the wire vocabulary: typed response structs whose JSON field names are
//     exactly Flink's (/overview, /jobs, /jobs/overview, /jobs/:jobid,
//     /jobs/:jobid/exceptions, /config, /taskmanagers, the checkpoint,
//     watermark and metric endpoints, and the asynchronous savepoint and
//     stop operations of savepoints.go), the job and task state names, and
//     the job-id format (32 lowercase hex characters);
//   - the server side: NewHandler turns a Cluster (implemented by the
//     JobManager) into an http.Handler, and Server gives it a lifecycle
//     (Start on an address, Shutdown) with no goroutine left behind;
//   - the client side: Client decodes the same structs and turns the
//     server's {"errors":[...]} bodies into *APIError values.
//
// The package knows nothing about how jobs run. The handler reads a snapshot
// from the Cluster per request and only shapes it; the only value it fills in
// itself is the "now" timestamp, from an injected clock; the metric
// endpoints shape a vertex's per-subtask metrics (MetricReporter) into
// Flink's three views: the vertex's "<subtask>.<name>" list, one subtask's,
// and the aggregates over subtasks. Every route is also
// served under the /v1 prefix, as Flink does.
//
// Flink 2.3's own client parses these answers with a strict mapper, so a
// few fields exist only for it (flinkshapes.go, JobOverview); see
// docs/architecture.md, "The local cluster and REST", and TestFlinkCLI.
package rest
