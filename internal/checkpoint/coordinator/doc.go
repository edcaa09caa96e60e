// Package coordinator holds the checkpoint coordinator's decisions as a pure
// state machine, like etcd-raft's RawNode: it does no I/O, reads no clock and
// starts no goroutine. The JobManager's driver feeds it events with the
// current time (epoch ms), under its own lock, and carries out the Output
// each event returns: send triggers, write metadata, notify tasks, delete
// files, fail the job, and call Tick again by Output.WakeAt.
//
// It owns, with Flink's semantics (CheckpointCoordinator,
// CheckpointRequestDecider, CheckpointFailureManager):
//   - checkpoint ids: they strictly increase, across restarts too (New takes
//     the first id; a restored job passes the restored id + 1);
//   - when to trigger: periodic checkpoints (interval, min pause, max
//     concurrent) and requested ones (final, savepoint), queued while the
//     in-flight slots are taken;
//   - which tasks acknowledged, timeouts, declines, subsumption;
//   - completion: a checkpoint completes only after every task acknowledged
//     it AND the caller reported its metadata written (Finalized with no
//     error); only then are tasks told to commit;
//   - retention of completed checkpoints (which to discard);
//   - counting consecutive failures and deciding to fail the job;
//   - the numbers and history the REST API shows.
//
// It does not own the acknowledged state handles (the caller keeps them per
// checkpoint id until it writes the metadata), the storage layout, or which
// checkpoint a restarted job restores from (the caller uses LatestCompleted).
//
// # Events
//
// Tick, TriggerNow, Ack, Decline, Finalized, Suspend and Resume. Each event
// first catches up to its time (checkpoints past their deadline expire, at
// their deadline), then applies itself, then triggers whatever is due. Time
// never goes backwards inside the coordinator: an earlier time is taken as
// the latest one seen.
//
// # Output ordering contract
//
// The caller acts on an Output's fields in their declared order:
// Completed (notify tasks), Savepoints (report), Aborted (notify tasks when
// asked, delete files), Discard (delete files), Rejected (report), Finalize
// (write metadata durably, then call Finalized), Trigger (snapshot the
// operator coordinators, then send to the sources), FailJob (fail the job),
// and finally schedule Tick at WakeAt. Output's doc comment says why.
//
// Things the caller may rely on:
//   - an id appears in at most one of Trigger, Finalize, Completed or
//     Savepoints, or Aborted per Output, and Trigger ids strictly increase;
//   - Completed ids strictly increase over the coordinator's life, and a
//     Discard never names the latest completed checkpoint;
//   - an Aborted id may have a metadata write in flight (it expired or was
//     subsumed during Finalize): its files are deleted after that write;
//   - after FailJob or Suspend nothing triggers until Resume.
package coordinator
