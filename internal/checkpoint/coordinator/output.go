package coordinator

import "fmt"

// TaskID is the index of an execution that must acknowledge every
// checkpoint, in 0..tasks-1 as given to New or Resume.
type TaskID int

// Kind says why a checkpoint was triggered.
type Kind int

const (
	// Periodic checkpoints follow Settings.Interval.
	Periodic Kind = iota
	// Final is requested once every source has finished its bounded input
	// (FLIP-147): the job may end when a checkpoint triggered at or after it
	// completes. A later checkpoint may subsume it and then serves as final.
	Final
	// Savepoint is requested by the user. It is never unaligned, is never
	// subsumed, is not retained (the user owns it), tasks are not notified
	// when it completes (Flink 1.15 and later), its failure does not count
	// towards tolerable-failed-checkpoints and its completion does not reset
	// the count. Kinds match internal/protocol's CheckpointKind values.
	Savepoint
)

// String returns the kind in lower case, as traces and logs print it.
func (k Kind) String() string {
	switch k {
	case Periodic:
		return "periodic"
	case Final:
		return "final"
	case Savepoint:
		return "savepoint"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Trigger asks the caller to start checkpoint ID.
type Trigger struct {
	ID int64
	// Timestamp is the trigger time, the checkpoint's timestamp.
	Timestamp int64
	Kind      Kind
	// Unaligned: barriers overtake in-flight buffers. False for savepoints.
	Unaligned bool
	// AlignedTimeout: an unaligned checkpoint starts aligned and switches to
	// unaligned after this many ms (0: unaligned at once).
	AlignedTimeout int64
	// AtLeastOnce: tasks do not block channels while aligning (Mode
	// AtLeastOnce; savepoints too, as in Flink).
	AtLeastOnce bool
	// Sources are the tasks to send the trigger to. Shared: do not modify.
	Sources []TaskID
}

// Aborted reports a checkpoint that ended without completing.
type Aborted struct {
	ID     int64
	Kind   Kind
	Reason string
	// NotifyTasks: tell every task that the checkpoint was aborted. False
	// when the tasks are gone (Suspend, a failing job).
	NotifyTasks bool
}

// Rejected reports a TriggerNow request that was refused before it got an
// id: the queue was full, or the coordinator is (or became) suspended.
type Rejected struct {
	Kind   Kind
	Reason string
}

// Output is everything the caller must do after an event, like etcd-raft's
// Ready. The caller acts on the fields in the order they are declared:
//
//  1. Completed: these checkpoints' metadata is durable; notify every task
//     (sinks commit). They go before Aborted so that a task hears that n
//     completed before it hears that a lower id it subsumed was aborted.
//  2. Savepoints: report to whoever asked; tasks are not notified.
//  3. Aborted: notify every task when NotifyTasks, report a failed savepoint
//     to whoever asked, then delete the checkpoint's files. If its metadata
//     write (an earlier Finalize) is still running, delete the files after
//     that write returns; a later Finalized for the id is ignored.
//  4. Discard: completed checkpoints no longer retained; delete their files.
//     The newer checkpoint that replaced them is already durable.
//  5. Rejected: report to whoever asked.
//  6. Finalize: every task acknowledged; write each checkpoint's metadata
//     (it must be durable) and only then call Finalized, with the error if
//     the write failed. The write may run outside the caller's lock.
//  7. Trigger: for each, snapshot the operator coordinators first, then send
//     the trigger to Sources, in the order given (ids increase).
//  8. FailJob: fail the job, after the cleanup above. The coordinator has
//     already suspended itself; Resume it when the job restarts.
//  9. WakeAt: call Tick at this time at the latest.
//
// Notes are for logs and traces only and ask for no action.
type Output struct {
	Completed  []int64
	Savepoints []int64
	Aborted    []Aborted
	Discard    []int64
	Rejected   []Rejected
	Finalize   []int64
	Trigger    []Trigger
	// FailJob, when not empty, is the message to fail the job with.
	FailJob string
	// WakeAt is the time (epoch ms) by which Tick must be called, because a
	// checkpoint expires or a periodic checkpoint is due then; 0: no need.
	// It is always later than the event's time. Events between ticks are
	// fine: every event first catches up to its time.
	WakeAt int64
	// Notes say why an event changed nothing (an ignored ack, a queued
	// request). For debugging only.
	Notes []string
}

// HasActions reports whether o asks the caller to do anything besides
// scheduling the next Tick.
func (o *Output) HasActions() bool {
	return len(o.Completed)+len(o.Savepoints)+len(o.Aborted)+len(o.Discard)+
		len(o.Rejected)+len(o.Finalize)+len(o.Trigger) > 0 || o.FailJob != ""
}
