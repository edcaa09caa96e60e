package operator

// The hooks below let operators take part in checkpoints. The task calls
// them on its goroutine: InitializeState after it created and restored the
// operator's state and before Open; SnapshotState at a checkpoint barrier,
// before it snapshots the operator's state stores; the notifications when
// the JobManager says a checkpoint completed or was aborted.

// StateInitializer is implemented by operators that read state of their own
// from their operator state (or keyed state) before they open. restored is
// true when the task restored state from a checkpoint.
type StateInitializer interface {
	InitializeState(restored bool) error
}

// Snapshotter is implemented by operators with state of their own that is
// not in their state stores yet (a source reader's positions, a sink's
// pre-committed output): SnapshotState writes it into them.
type Snapshotter interface {
	SnapshotState(checkpointID int64) error
}

// CheckpointListener is implemented by operators that act when a checkpoint
// completes (commit what was pre-committed) or is aborted.
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
	NotifyCheckpointAborted(checkpointID int64)
}

// EventHandler is implemented by operators that receive events from their
// coordinator on the JobManager (a source reader's split assignments).
type EventHandler interface {
	HandleOperatorEvent(payload []byte) error
}

// InputStatusReceiver is implemented by operators with several inputs that
// combine their inputs' watermarks themselves (Flink's AbstractStreamOperator
// with its IndexedCombinedWatermarkStatus): the task tells them when an
// input as a whole (every live channel of it) goes idle or active again, so
// an idle input leaves their combined watermark. Operator inputs carry no
// status themselves (docs/windows.md, decision 10); this is the one place
// that needs it. The task calls it on its goroutine, for idle after the
// input's last watermark and for active before its next one, and then
// decides its own output status (idle when every input is).
type InputStatusReceiver interface {
	ProcessInputStatus(input int, idle bool)
}
