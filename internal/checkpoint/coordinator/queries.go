package coordinator

import "slices"

// Status is a checkpoint's status in the history, as Flink's REST API
// spells it.
type Status int

const (
	InProgress Status = iota
	Completed
	Failed
)

// String returns IN_PROGRESS, COMPLETED or FAILED.
func (s Status) String() string {
	switch s {
	case InProgress:
		return "IN_PROGRESS"
	case Completed:
		return "COMPLETED"
	case Failed:
		return "FAILED"
	}
	return "UNKNOWN"
}

// PendingInfo describes a pending checkpoint. Times are epoch ms.
type PendingInfo struct {
	ID          int64
	Kind        Kind
	TriggerTime int64
	Acked       int // tasks that acknowledged
	Tasks       int // tasks that must acknowledge
	// AckTime is, per task, when it acknowledged; -1 if it has not yet.
	AckTime []int64
	// Finalizing: every task acknowledged and the metadata is being written.
	Finalizing bool
}

// Pending returns the pending checkpoints by increasing id.
func (c *Coordinator) Pending() []PendingInfo {
	out := make([]PendingInfo, len(c.pending))
	for i, p := range c.pending {
		out[i] = PendingInfo{ID: p.id, Kind: p.kind, TriggerTime: p.trigger, Acked: p.acked,
			Tasks: len(p.ackTime), AckTime: slices.Clone(p.ackTime), Finalizing: p.finalizing}
	}
	return out
}

// Counts are the checkpoint counters Flink's REST API reports, and a few of
// the coordinator's own.
type Counts struct {
	Triggered  int64 // checkpoints triggered since New ("total")
	InProgress int   // pending, finalizing included
	Completed  int64 // completed, savepoints included
	Failed     int64 // aborted for any reason, subsumed included
	// Restored counts the Resumes that had a retained checkpoint to restore
	// from, and LastRestored is the latest such checkpoint: the driver
	// restores from LatestCompleted, as Flink restores from its latest.
	Restored     int64
	LastRestored int64
	Queued       int // TriggerNow requests waiting for a slot
	// ConsecutiveFailures counts counted failures since the last completed
	// checkpoint (or since the job last failed because of them).
	ConsecutiveFailures int
}

// Stats returns the counters.
func (c *Coordinator) Stats() Counts {
	n := c.counts
	n.InProgress = len(c.pending)
	n.Queued = len(c.queue)
	n.ConsecutiveFailures = c.consecutive
	return n
}

// HistoryEntry is one recent checkpoint. Times are epoch ms, -1 when not
// known yet.
type HistoryEntry struct {
	ID          int64
	Kind        Kind
	Status      Status
	TriggerTime int64
	LatestAck   int64 // -1 before the first acknowledgement
	EndTime     int64 // completion or failure; -1 while in progress
	Acked       int
	Tasks       int
	// FailureReason says why a Failed checkpoint was aborted.
	FailureReason string
	// Discarded: a completed checkpoint no longer retained.
	Discarded bool
}

// History returns up to n of the most recent checkpoints, newest first. It
// holds at most Settings.HistorySize entries.
func (c *Coordinator) History(n int) []HistoryEntry {
	n = min(max(n, 0), len(c.history))
	out := make([]HistoryEntry, n)
	for i := range out {
		out[i] = c.history[len(c.history)-1-i]
	}
	return out
}

// LatestCompleted returns the latest retained completed checkpoint (the one
// to restore from), or 0 if there is none. Savepoints are not included.
func (c *Coordinator) LatestCompleted() int64 {
	if n := len(c.retained); n > 0 {
		return c.retained[n-1]
	}
	return 0
}

// Retained returns the retained completed checkpoints, oldest first.
func (c *Coordinator) Retained() []int64 { return slices.Clone(c.retained) }

// addHistory appends e, dropping the oldest entry beyond HistorySize.
func (c *Coordinator) addHistory(e HistoryEntry) {
	if len(c.history) == c.s.HistorySize {
		copy(c.history, c.history[1:])
		c.history[len(c.history)-1] = e
		return
	}
	c.history = append(c.history, e)
}

// historyEntry returns id's entry, or nil if it has left the history.
func (c *Coordinator) historyEntry(id int64) *HistoryEntry {
	for i := len(c.history) - 1; i >= 0; i-- {
		if c.history[i].ID == id {
			return &c.history[i]
		}
	}
	return nil
}
