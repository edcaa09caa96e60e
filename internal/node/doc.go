// Package node runs a JobManager or a TaskManager as a process of a
// multi-process cluster (docs/distributed-runtime.md, decisions 1-4): the
// libraries behind `weir jobmanager` and `weir taskmanager`.
//
// It owns:
//   - JobManager: the embedded cluster's JobManager and REST API without
//     TaskManagers of its own (cluster.Config.Remote), the control plane's
//     server (internal/rpc) that admits TaskManagers of the same build
//     only, hands each session to the JobManager as that TaskManager's
//     gateway and reports a session's end as the TaskManager's loss, and
//     session mode's submissions: each job runs its program (a job compiled
//     into the binary; the weir command runs it under launch.OnCluster, so
//     the program's checks and Execute run unchanged), and in application
//     mode the application's description to its TaskManagers;
//   - TaskManager: its data plane (one internal/network/tcp listener and
//     Server for the process's life, listening on --data-address and
//     registered with its advertised address: the bound one, or with an
//     unspecified host the local address of a connection to the
//     JobManager), registration with backoff under a stable id, a
//     taskmanager.TaskManager per session whose JobBuilder builds each job
//     with TaskManagerConfig.Build (the weir command runs its program under
//     launch.Building, whose BuildJob checks the graph's fingerprint
//     against the JobManager's), heartbeats, fencing (a session
//     that ends cancels everything the TaskManager runs before it
//     registers again), and deregistration on shutdown;
//   - high availability (ha.go): RunContender, a JobManager that stands by
//     (rpc.Standby and a REST API answering 503 with the leader's address),
//     campaigns through an ha.Service, leads under its term's epoch
//     (recording submissions, fencing each job's checkpoints and recording
//     their completion in the store, running the store's unfinished jobs
//     again under their ids from their latest checkpoint), and steps down
//     when its term ends;
//   - reactive mode (reactive.go): a RunJob wrapper that runs a job at the
//     parallelism of the cluster's slots and again, from its latest
//     checkpoint, when they change;
//   - BuildID: what names a binary at registration.
//
// # Invariants
//
//   - A TaskManager runs executions only inside a session: when its session
//     ends, every execution is canceled and has returned before it
//     registers again, so a JobManager that declared it lost never races it.
//   - The loss of a TaskManager is reported for its current session only: a
//     session replaced by a new registration of the same id (which loses the
//     old one itself) is not reported again.
//   - A leader records nothing once its term is over: every store write is
//     fenced by the term, and a job canceled because the term ended gets no
//     finished record (the next leader runs it again).
//   - Processes of different builds never run one job: registration and
//     submission compare build ids, and the graph's fingerprint is compared
//     when a TaskManager builds a job.
//
// The binary supplies what runs jobs (JobManagerConfig.Run, the runner of
// session-mode submissions; TaskManagerConfig.Build, the builder of
// registered jobs): node does not import internal/launch, which starts
// nodes for application mode (JobManagerConfig.Application, and
// TaskManagerConfig.Application, the digest a TaskManager registers with).
package node
