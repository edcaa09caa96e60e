// Package cluster assembles the embedded local cluster: one JobManager, a
// number of TaskManagers with slots, the in-process shuffle and, optionally,
// the REST API. It runs the same JobManager and TaskManager code a
// distributed deployment will; only the transport is in-process.
//
// The JobManager and the TaskManagers see each other only through the
// protocol's loopback gateways, which encode every control message and hand
// the other side a decoded copy: nothing crosses between them by pointer,
// so every local run exercises the boundary a network will have. What each
// side needs of a job beyond the messages (its graph, clock, checkpoint
// store, settings) is given to it by the launcher, as each process of a
// distributed job will build its own (RegisterJob for the TaskManagers,
// jobmanager.JobSpec for the JobManager). The TaskManagers heartbeat every
// 50 ms (Config.HeartbeatInterval) through the loopback, and the
// JobManager loses none by silence unless Config.HeartbeatTimeout asks it
// to: a TaskManager in the JobManager's process cannot be lost alone
// (decision 11). CrashTaskManager loses a TaskManager as a crashed process
// would, for failover tests.
package cluster
