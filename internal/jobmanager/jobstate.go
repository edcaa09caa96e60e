package jobmanager

import "fmt"

// JobStatus is a job's state, with Flink's names.
type JobStatus string

// Job states.
const (
	JobCreated    JobStatus = "CREATED"
	JobRunning    JobStatus = "RUNNING"
	JobFailing    JobStatus = "FAILING"
	JobFailed     JobStatus = "FAILED"
	JobCancelling JobStatus = "CANCELLING"
	JobCanceled   JobStatus = "CANCELED"
	JobFinished   JobStatus = "FINISHED"
)

// Terminal reports whether the job can no longer change state.
func (s JobStatus) Terminal() bool {
	return s == JobFailed || s == JobCanceled || s == JobFinished
}

// TaskState is a subtask execution's state, with Flink's names.
type TaskState string

// Task states.
const (
	TaskCreated   TaskState = "CREATED"
	TaskScheduled TaskState = "SCHEDULED"
	TaskDeploying TaskState = "DEPLOYING"
	TaskRunning   TaskState = "RUNNING"
	TaskFinished  TaskState = "FINISHED"
	TaskCanceling TaskState = "CANCELING"
	TaskCanceled  TaskState = "CANCELED"
	TaskFailed    TaskState = "FAILED"
)

// Terminal reports whether the execution has ended.
func (s TaskState) Terminal() bool {
	return s == TaskFinished || s == TaskCanceled || s == TaskFailed
}

// jobTransitions lists the allowed job state changes.
var jobTransitions = map[JobStatus][]JobStatus{
	JobCreated:    {JobRunning, JobFailing, JobCancelling, JobFailed},
	JobRunning:    {JobFinished, JobFailing, JobCancelling},
	JobFailing:    {JobFailed},
	JobCancelling: {JobCanceled},
}

func allowed(from, to JobStatus) bool {
	for _, s := range jobTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// jobState is the pure core of a job's lifecycle: it takes events (task state
// changes, cancel requests) and returns the executions to cancel. It owns no
// goroutines and reads no clock.
type jobState struct {
	status   JobStatus
	tasks    []TaskState // by execution index
	live     int         // executions not yet terminal
	cause    error       // first failure
	failedAt int         // execution index of the first failure, -1 if none
}

func newJobState(executions int) *jobState {
	s := &jobState{status: JobCreated, tasks: make([]TaskState, executions), live: executions, failedAt: -1}
	for i := range s.tasks {
		s.tasks[i] = TaskCreated
	}
	return s
}

func (s *jobState) setStatus(to JobStatus) {
	if !allowed(s.status, to) {
		panic(fmt.Sprintf("jobmanager: job cannot go from %s to %s", s.status, to))
	}
	s.status = to
}

// start marks the job running once its tasks are deployed.
func (s *jobState) start() {
	if s.status == JobCreated {
		s.setStatus(JobRunning)
		s.settle() // a job without executions is done at once
	}
}

// cancel handles a user's cancel request; it returns the executions to cancel.
func (s *jobState) cancel() []int {
	if s.status.Terminal() || s.status == JobCancelling || s.status == JobFailing {
		return nil
	}
	s.setStatus(JobCancelling)
	out := s.cancelLive(-1)
	s.settle() // nothing live: canceled at once
	return out
}

// fail fails the job for a reason outside any task (for example scheduling).
func (s *jobState) fail(err error) []int {
	if s.status.Terminal() || s.status == JobFailing {
		return nil
	}
	if s.cause == nil {
		s.cause = err
	}
	if s.status == JobCancelling {
		return nil
	}
	s.setStatus(JobFailing)
	out := s.cancelLive(-1)
	s.settle()
	return out
}

// update records execution i reaching state st (with err for failures) and
// returns the executions to cancel as a consequence.
func (s *jobState) update(i int, st TaskState, err error) []int {
	prev := s.tasks[i]
	if prev.Terminal() {
		return nil // late report from an execution that already ended
	}
	s.tasks[i] = st
	if !st.Terminal() {
		return nil
	}
	s.live--
	var out []int
	if st == TaskFailed && s.status != JobFailing && s.status != JobCancelling && !s.status.Terminal() {
		s.cause, s.failedAt = err, i
		s.setStatus(JobFailing)
		out = s.cancelLive(i)
	}
	s.settle()
	return out
}

func (s *jobState) cancelLive(except int) []int {
	var out []int
	for i, t := range s.tasks {
		if i != except && !t.Terminal() {
			s.tasks[i] = TaskCanceling
			out = append(out, i)
		}
	}
	return out
}

// settle moves the job to its terminal state once no execution is live.
func (s *jobState) settle() {
	if s.live > 0 {
		return
	}
	switch s.status {
	case JobFailing:
		s.setStatus(JobFailed)
	case JobCancelling:
		s.setStatus(JobCanceled)
	case JobRunning:
		s.setStatus(JobFinished)
	case JobCreated:
		s.setStatus(JobRunning)
		s.setStatus(JobFinished)
	}
}
