// Package taskmanager runs subtasks in slots. It knows each job it runs
// tasks of from a local registration (the graph every process of a job
// builds, and the job's settings), receives deployments from the
// JobManager, wires each subtask's result partitions (from its network
// memory budget) and input gate through the shuffle, runs the subtask on
// its own goroutine, forwards checkpoint triggers, notifications and
// operator events to it, and reports its state changes, acknowledgements
// and events back through protocol.JobManagerGateway. It registers with
// its slots and network memory (Registration) and, from Start on,
// heartbeats through a heartbeat.Member (heartbeat.go: decisions 10-13):
// every heartbeat.interval a Heartbeat with what it runs (execution,
// allocation, state), their counters and watermarks and its free memory;
// on a reply it cancels the executions under allocations the JobManager no
// longer holds, and with no reply for heartbeat.timeout it fences itself
// (cancels everything, releases its partitions, registers again). Each
// task's final counters still precede its terminal state. It admits a
// deployment only under its allocation (protocol.AllocationID) when that
// is held already or a slot is free, and refuses one of an attempt older
// than the newest of its job it was deployed, or one it admitted before,
// so late and duplicate deployments are harmless (admitLocked). Crash
// stops it as a crashed process stops, for the embedded cluster to lose it.
//
// With a data plane (Config.Data, a TaskManager process; dataplane.go) it
// learns where each job slot of an attempt runs from DeployAttempt, ahead
// of the attempt's deployments: an input channel whose producer runs in
// another TaskManager is requested over internal/network/tcp (its buffers
// from this TaskManager's network memory, exclusive ones per channel and a
// task's pool of the job's FloatingBuffers shared by its remote channels,
// taken only while the memory has room; the input channels are added on
// the task's goroutine, so a slow dial never holds up the JobManager's
// messages), a result partition with a
// consumer elsewhere is published on the process's tcp.Server, and a
// failure of a remote channel, on either side, fails the task at once
// (task.Task.Fail) naming the peer TaskManager. Channels between subtasks
// of one TaskManager stay local (network.Connect); without a data plane
// (the embedded cluster) every channel is.
package taskmanager
