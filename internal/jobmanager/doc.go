// Package jobmanager schedules jobs onto TaskManager slots and follows them to
// the end: it expands a JobGraph into subtask executions, deploys them through
// protocol.TaskManagerGateway, tracks their states and turns those into the
// job's state; it restarts a failed job from its latest completed checkpoint
// under the restart strategy, drives the checkpoint coordinator (triggers,
// metadata written last, notifications, retention), plans what each subtask
// restores, and hosts the operator coordinators (source split enumerators,
// through the byte-payload contract of internal/opcoordinator).
// It takes savepoints on request (savepoints.go): checkpoints of kind
// Savepoint copied into a self-contained folder, and stop-with-savepoint,
// after which the tasks end FINISHED. It keeps the checkpoint storage
// bounded (hygiene.go): a resumed run cleans up after the earlier runs of
// its lineage and counts their checkpoints towards retention, and a running
// job sweeps the files of checkpoints that never completed. A job without
// checkpointing has a coordinator for savepoints only
// (CheckpointSpec.SavepointsOnly).
//
// The decisions are made by pure state machines: the job's lifecycle in
// jobstate.go, checkpoints in internal/checkpoint/coordinator, restarts in
// internal/restart; the JobManager type is the driver around them.
// TaskManagers are reached only through the plain-data messages of
// internal/protocol, so a later multi-process mode can put RPC behind them.
// No gateway call is made with the JobManager's lock held: code under the
// lock queues its messages in each TaskManager's outbox (outbox.go), which
// one goroutine at a time delivers in order. What the JobManager must know
// of a TaskManager it books itself from the registration (slots, network
// memory); counters ride the TaskManagers' heartbeats (an execution's
// final ones ReportTaskStats) and the view serves the latest, so a REST
// request asks no TaskManager.
//
// Heartbeats (heartbeat.go, decisions 10-13): a heartbeat.Monitor under
// jm.mu watches every registered TaskManager on HeartbeatConfig's clock
// (heartbeat.interval, heartbeat.timeout; NoTimeout on the embedded
// cluster), one goroutine ticks it; each heartbeat is reconciled with what
// was deployed there (unheld executions cancelled, missing ones failed)
// and answered with the allocations held there; a TaskManager silent for
// heartbeat.timeout, or one that deregisters, is lost (TaskManagerLost).
//
// TaskManagers are known by their registration id; TaskManagerLost
// removes one (its executions fail, its jobs restart elsewhere). Each
// attempt allocates its slots when it is deployed, over the TaskManagers
// registered then, and waits for them up to slot.request.timeout
// (slots.go).
//
// Files by role: jobmanager.go the types and the job lifecycle calls
// (Cancel, Fail, Wait); schedule.go scheduling, deployment, task state
// updates and restarts; slots.go membership, slot allocation per attempt
// and the wait for slots; heartbeat.go heartbeats; outbox.go the messages
// to TaskManagers; view.go the read-only view the REST layer queries and
// the counters it shows; coordinators.go the hosting of operator
// coordinators; checkpoints.go, savepoints.go, restore.go and hygiene.go
// checkpointing.
package jobmanager
