// Package launch builds and starts what runs a job for weir's
// Environment.Execute and ExecuteAsync: today an embedded local cluster
// (a JobManager, TaskManagers and, when asked, the REST API) in this
// process.
//
// It owns everything between a compiled job graph and a running job:
// sizing the cluster (TaskManagers and slots), the checkpoint storage and
// its write memory, the staging store of savepoints for a job without
// checkpointing, the lineage lease of the job's name, the restart
// strategy, the restore plan from the caller's point of view (ResumeFrom:
// "latest" or a snapshot's path, the max parallelism a resume adopts or
// refuses), the state directory, the process memory guard and the Go
// soft memory limit, and the job's end: the error the caller sees, the
// cluster's shutdown and the release of all of the above.
//
// It also runs a user's program as one process of a cluster in
// application mode (application.go): the JobManager role starts an
// internal/node JobManager and runs the job on it; the TaskManager role
// follows the application, adopts its arguments (re-executing the
// process), checks it built the same job, and serves as an internal/node
// TaskManager until the application ends.
//
// The root package converts its public Config into this package's Config
// (plain values, no public types) and wraps the Job it returns; nothing
// here is part of the public API. Error messages name the public setting
// (Config.X, the weir run flag) because they reach the user unchanged.
package launch
