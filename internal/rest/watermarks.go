package rest

import (
	"net/http"
)

// WatermarkReporter is implemented by clusters that report watermarks.
type WatermarkReporter interface {
	// Watermarks returns the watermark metrics of one vertex of a job;
	// ok is false for an unknown job or vertex.
	Watermarks(jobID, vertexID string) (metrics []Metric, ok bool)
}

// Metric is one metric value as Flink's metric endpoints answer it: the id
// "<subtask>.currentInputWatermark" and the value as a string.
type Metric struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// watermarks serves /jobs/{jobid}/vertices/{vertexid}/watermarks.
func (h *handler) watermarks(w http.ResponseWriter, r *http.Request, id string) {
	vid := r.PathValue("vertexid")
	ms, ok := h.wms.Watermarks(id, vid)
	if !ok {
		writeError(w, http.StatusNotFound, "Job "+id+" or vertex "+vid+" not found")
		return
	}
	writeJSON(w, http.StatusOK, ms)
}
