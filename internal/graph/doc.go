// Package graph turns the transformations a job declares (a StreamGraph) into
// the JobGraph the JobManager schedules: operators chained into vertices,
// network edges between vertices with their partitioning and wiring, stable
// operator IDs and a fingerprint of the whole graph.
//
// It is pure and deterministic: the same program builds the same JobGraph in
// every process (the job binary is the worker), so nothing here reads maps in
// iteration order, the clock or the environment. Operator factories and
// stream types are opaque payloads (internal/operator interprets them).
package graph
