package rest

import (
	"net/http"

	"github.com/weirhq/weir/internal/protocol"
)

// VertexDetailer is implemented by clusters that say where each subtask of
// a vertex runs (GET /jobs/{jobid}/vertices/{vertexid}).
type VertexDetailer interface {
	// VertexDetails returns one vertex of a job; ok is false for an
	// unknown job or vertex.
	VertexDetails(jobID, vertexID string) (d VertexDetails, ok bool)
}

// VertexDetails is the body of GET /jobs/{jobid}/vertices/{vertexid}:
// Flink's JobVertexDetailsInfo.
type VertexDetails struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Parallelism    int             `json:"parallelism"`
	MaxParallelism int             `json:"maxParallelism"`
	Now            int64           `json:"now"`
	Subtasks       []SubtaskDetail `json:"subtasks"`
}

// SubtaskDetail is one subtask's current execution: Flink's
// SubtaskExecutionAttemptDetailsInfo, without timings and metrics.
type SubtaskDetail struct {
	Subtask int                `json:"subtask"`
	Status  protocol.TaskState `json:"status"`
	Attempt int                `json:"attempt"`
	// Endpoint is where the TaskManager runs ("" while the subtask waits
	// for a slot); TaskManagerID is its id.
	Endpoint      string `json:"endpoint"`
	TaskManagerID string `json:"taskmanager-id"`
}

// vertexDetails serves /jobs/{jobid}/vertices/{vertexid}.
func (h *handler) vertexDetails(w http.ResponseWriter, r *http.Request, id string) {
	vid := r.PathValue("vertexid")
	d, ok := h.vds.VertexDetails(id, vid)
	if !ok {
		writeError(w, http.StatusNotFound, "Job "+id+" or vertex "+vid+" not found")
		return
	}
	writeJSON(w, http.StatusOK, d)
}
