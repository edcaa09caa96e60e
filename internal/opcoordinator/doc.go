// Package opcoordinator is the contract between the JobManager and the
// operators that have a part on it (Flink's OperatorCoordinator: a source's
// split enumerator). The JobManager hosts a Coordinator per such operator
// and gives it a Context; the coordinator and the operator's subtasks talk
// only through events that are byte payloads, so the coordinator's side
// needs nothing of the runtime and the events can cross a network.
//
// It imports only the standard library: the control plane
// (internal/jobmanager) depends on it, and internal/operator implements it.
package opcoordinator
