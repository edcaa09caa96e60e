// Package cluster assembles the embedded local cluster: one JobManager, a
// number of TaskManagers with slots, the in-process shuffle and, optionally,
// the REST API. It runs the same JobManager and TaskManager code a
// distributed deployment will; only the transport is in-process.
//
// The JobManager and the TaskManagers see each other only through the
// protocol's loopback gateways, which encode every control message and hand
// the other side a decoded copy: nothing crosses between them by pointer,
// so every local run exercises the boundary a network will have. A job
// reaches the TaskManagers as a protocol.RegisterJob message, like in a
// multi-process cluster; their JobBuilder (Local.Jobs) then hands them the
// graph, clock and checkpoint store the launcher built in this process,
// where a TaskManager process builds its own. The TaskManagers heartbeat
// every 50 ms (Config.HeartbeatInterval) through the loopback, and the
// JobManager loses none by silence unless Config.HeartbeatTimeout asks it
// to: a TaskManager in the JobManager's process cannot be lost alone
// (decision 11). CrashTaskManager loses a TaskManager as a crashed process
// would, for failover tests.
package cluster
