// Package cluster assembles the embedded local cluster: one JobManager, a
// number of TaskManagers with slots, the in-process shuffle and, optionally,
// the REST API. It runs the same JobManager and TaskManager code a
// distributed deployment will; only the transport is in-process.
package cluster
