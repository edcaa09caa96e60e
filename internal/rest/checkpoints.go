package rest

import (
	"fmt"
	"net/http"
	"strconv"
)

// CheckpointReporter is optionally implemented by a Cluster. When it is, the
// handler serves /jobs/{jobid}/checkpoints, /checkpoints/config,
// /checkpoints/details/{checkpointid} and
// /checkpoints/details/{checkpointid}/subtasks/{vertexid}, shaped like
// Flink's; otherwise they answer 404.
type CheckpointReporter interface {
	// Checkpoints returns a job's checkpoint statistics; ok is false for an
	// unknown job, found false for a job that takes no checkpoints.
	Checkpoints(jobID string) (stats CheckpointingStatistics, found, ok bool)
	CheckpointConfig(jobID string) (cfg CheckpointConfigInfo, found, ok bool)
	// CheckpointSubtasks returns one vertex's subtasks in one checkpoint.
	CheckpointSubtasks(jobID string, checkpointID int64, vertexID string) (TaskCheckpointDetails, bool)
}

// CheckpointingStatistics is the body of GET /jobs/{jobid}/checkpoints.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Summary CheckpointSummary      `json:"summary"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"`
}

// CheckpointCounts counts a job's checkpoints.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int   `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// CheckpointSummary summarizes the completed checkpoints of the history.
type CheckpointSummary struct {
	CheckpointedSize  MinMaxAvg `json:"checkpointed_size"`
	StateSize         MinMaxAvg `json:"state_size"`
	EndToEndDuration  MinMaxAvg `json:"end_to_end_duration"`
	AlignmentBuffered MinMaxAvg `json:"alignment_buffered"`
	ProcessedData     MinMaxAvg `json:"processed_data"`
	PersistedData     MinMaxAvg `json:"persisted_data"`
}

// MinMaxAvg is a statistic over checkpoints.
type MinMaxAvg struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
	Avg int64 `json:"avg"`
}

// LatestCheckpoints are the newest checkpoint of each kind, or null.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// RestoredCheckpoint is the checkpoint the job (last) restored from.
type RestoredCheckpoint struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// CheckpointStatistics is one checkpoint (Flink's Completed-, Failed- and
// PendingCheckpointStatistics in one shape; the fields that do not apply
// are zero). Times are epoch ms, durations ms, sizes bytes.
type CheckpointStatistics struct {
	ClassName              string                              `json:"className"`
	ID                     int64                               `json:"id"`
	Status                 string                              `json:"status"`
	IsSavepoint            bool                                `json:"is_savepoint"`
	TriggerTimestamp       int64                               `json:"trigger_timestamp"`
	LatestAckTimestamp     int64                               `json:"latest_ack_timestamp"`
	CheckpointedSize       int64                               `json:"checkpointed_size"`
	StateSize              int64                               `json:"state_size"`
	EndToEndDuration       int64                               `json:"end_to_end_duration"`
	AlignmentBuffered      int64                               `json:"alignment_buffered"`
	ProcessedData          int64                               `json:"processed_data"`
	PersistedData          int64                               `json:"persisted_data"`
	NumSubtasks            int                                 `json:"num_subtasks"`
	NumAcknowledgedSubtask int                                 `json:"num_acknowledged_subtasks"`
	CheckpointType         string                              `json:"checkpoint_type"`
	Tasks                  map[string]TaskCheckpointStatistics `json:"tasks"`
	ExternalPath           string                              `json:"external_path,omitempty"`
	Discarded              bool                                `json:"discarded"`
	FailureTimestamp       int64                               `json:"failure_timestamp,omitempty"`
	FailureMessage         string                              `json:"failure_message,omitempty"`
}

// TaskCheckpointStatistics is one vertex's part of a checkpoint.
type TaskCheckpointStatistics struct {
	ID                     int64  `json:"id"`
	Status                 string `json:"status"`
	LatestAckTimestamp     int64  `json:"latest_ack_timestamp"`
	CheckpointedSize       int64  `json:"checkpointed_size"`
	StateSize              int64  `json:"state_size"`
	EndToEndDuration       int64  `json:"end_to_end_duration"`
	AlignmentBuffered      int64  `json:"alignment_buffered"`
	ProcessedData          int64  `json:"processed_data"`
	PersistedData          int64  `json:"persisted_data"`
	NumSubtasks            int    `json:"num_subtasks"`
	NumAcknowledgedSubtask int    `json:"num_acknowledged_subtasks"`
}

// TaskCheckpointDetails is the body of
// /jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}.
type TaskCheckpointDetails struct {
	TaskCheckpointStatistics
	Subtasks []SubtaskCheckpoint `json:"subtasks"`
}

// SubtaskCheckpoint is one subtask's acknowledgement.
type SubtaskCheckpoint struct {
	Index               int               `json:"index"`
	Status              string            `json:"status"` // "completed" or "pending_or_failed"
	AckTimestamp        int64             `json:"ack_timestamp,omitempty"`
	EndToEndDuration    int64             `json:"end_to_end_duration,omitempty"`
	StateSize           int64             `json:"state_size,omitempty"`
	CheckpointedSize    int64             `json:"checkpointed_size,omitempty"`
	Checkpoint          *SubtaskSyncAsync `json:"checkpoint,omitempty"`
	Alignment           *SubtaskAlignment `json:"alignment,omitempty"`
	UnalignedCheckpoint bool              `json:"unaligned_checkpoint"`
	Finished            bool              `json:"finished_input"`
}

// SubtaskSyncAsync are a subtask's synchronous and asynchronous durations (ms).
type SubtaskSyncAsync struct {
	Sync  int64 `json:"sync"`
	Async int64 `json:"async"`
}

// SubtaskAlignment is a subtask's alignment.
type SubtaskAlignment struct {
	Duration  int64 `json:"duration"`
	Persisted int64 `json:"persisted"`
}

// CheckpointConfigInfo is the body of GET /jobs/{jobid}/checkpoints/config.
type CheckpointConfigInfo struct {
	Mode                        string                `json:"mode"` // exactly_once or at_least_once
	Interval                    int64                 `json:"interval"`
	Timeout                     int64                 `json:"timeout"`
	MinPause                    int64                 `json:"min_pause"`
	MaxConcurrent               int                   `json:"max_concurrent"`
	Externalization             ExternalizationConfig `json:"externalization"`
	StateBackend                string                `json:"state_backend"`
	CheckpointStorage           string                `json:"checkpoint_storage"`
	CheckpointDir               string                `json:"checkpoint_dir"`
	UnalignedCheckpoints        bool                  `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints  int                   `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout    int64                 `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish bool                  `json:"checkpoints_after_tasks_finish"`
	NumRetained                 int                   `json:"num_retained"`
}

// ExternalizationConfig says whether checkpoints outlive the job.
type ExternalizationConfig struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
}

func (h *handler) checkpoints(w http.ResponseWriter, _ *http.Request, id string) {
	st, found, ok := h.cps.Checkpoints(id)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "Job "+id+" not found")
	case !found:
		writeError(w, http.StatusNotFound, "Checkpointing is not enabled for job "+id)
	default:
		if st.History == nil {
			st.History = []CheckpointStatistics{}
		}
		writeJSON(w, http.StatusOK, st)
	}
}

func (h *handler) checkpointConfig(w http.ResponseWriter, _ *http.Request, id string) {
	cfg, found, ok := h.cps.CheckpointConfig(id)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "Job "+id+" not found")
	case !found:
		writeError(w, http.StatusNotFound, "Checkpointing is not enabled for job "+id)
	default:
		writeJSON(w, http.StatusOK, cfg)
	}
}

func (h *handler) checkpointDetails(w http.ResponseWriter, r *http.Request, id string) {
	cid, err := strconv.ParseInt(r.PathValue("checkpointid"), 10, 64)
	if err != nil || cid < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Malformed checkpoint id %q", r.PathValue("checkpointid")))
		return
	}
	st, found, ok := h.cps.Checkpoints(id)
	if !ok || !found {
		writeError(w, http.StatusNotFound, "Job "+id+" not found or without checkpoints")
		return
	}
	for _, c := range st.History {
		if c.ID == cid {
			writeJSON(w, http.StatusOK, c)
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Checkpoint %d is not in the job's recent history", cid))
}

func (h *handler) checkpointSubtasks(w http.ResponseWriter, r *http.Request, id string) {
	cid, err := strconv.ParseInt(r.PathValue("checkpointid"), 10, 64)
	if err != nil || cid < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Malformed checkpoint id %q", r.PathValue("checkpointid")))
		return
	}
	d, ok := h.cps.CheckpointSubtasks(id, cid, r.PathValue("vertexid"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("No checkpoint %d of vertex %s in job %s", cid, r.PathValue("vertexid"), id))
		return
	}
	writeJSON(w, http.StatusOK, d)
}
