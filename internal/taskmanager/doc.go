// Package taskmanager runs subtasks in slots. It knows each job it runs
// tasks of from a local registration (the graph every process of a job
// builds, and the job's settings), receives deployments from the
// JobManager, wires each subtask's result partitions (from its network
// memory budget) and input gate through the shuffle, runs the subtask on
// its own goroutine, forwards checkpoint triggers, notifications and
// operator events to it, and reports its state changes, acknowledgements
// and events back through protocol.JobManagerGateway. It registers with
// its slots and network memory (Registration), and pushes its running
// tasks' counters to the JobManager every publish period, in one message,
// and each task's final counters before its terminal state. It admits a
// deployment only under its allocation (protocol.AllocationID) when that
// is held already or a slot is free, and refuses one of an attempt older
// than the newest of its job it was deployed, or one it admitted before,
// so late and duplicate deployments are harmless (admitLocked). Crash
// stops it as a crashed process stops, for the embedded cluster to lose it.
package taskmanager
