package cluster

import (
	"errors"
	"net/http"

	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/rest"
)

// The view's savepoint operations, in Flink's asynchronous-operation shapes.

func (v *view) TriggerSavepoint(jobID string, t rest.SavepointTrigger) (string, error) {
	id, err := v.c.JM.TriggerSavepoint(jobID, jobmanager.SavepointOptions{TargetDir: t.TargetDir, Native: t.Native, Stop: t.Stop, Drain: t.Drain, Cancel: t.Cancel})
	return id, restError(err)
}

func (v *view) SavepointStatus(jobID, requestID string) (rest.AsyncOperationResult, error) {
	st, err := v.c.JM.Savepoint(jobID, requestID)
	if err != nil {
		return rest.AsyncOperationResult{}, restError(err)
	}
	if !st.Done {
		return rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusInProgress}}, nil
	}
	info := &rest.SavepointInfo{Location: st.Location}
	if st.Err != nil {
		info = &rest.SavepointInfo{FailureCause: &rest.SerializedThrowable{
			Class: "org.apache.flink.runtime.checkpoint.CheckpointException", StackTrace: st.Err.Error()}}
	}
	return rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusCompleted}, Operation: info}, nil
}

// restError maps the JobManager's savepoint errors to HTTP statuses.
func restError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jobmanager.ErrJobNotFound):
		return rest.ErrJobNotFound
	case errors.Is(err, jobmanager.ErrSavepointRequestNotFound):
		return &rest.StatusError{Status: http.StatusNotFound, Msg: err.Error()}
	case errors.Is(err, jobmanager.ErrJobNotRunning), errors.Is(err, jobmanager.ErrSavepointInProgress):
		return &rest.StatusError{Status: http.StatusConflict, Msg: err.Error()}
	case errors.Is(err, jobmanager.ErrBadSavepointRequest):
		return &rest.StatusError{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	return &rest.StatusError{Status: http.StatusInternalServerError, Msg: err.Error()}
}
