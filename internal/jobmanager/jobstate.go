package jobmanager

import (
	"fmt"

	"github.com/weirhq/weir/internal/rest"
)

// The job and execution states are Flink's, defined once in internal/rest
// (the names Flink's REST API and tools use): rest.JobState, rest.TaskState.

// jobTransitions lists the allowed job state changes.
var jobTransitions = map[rest.JobState][]rest.JobState{
	rest.JobCreated:    {rest.JobRunning, rest.JobFailing, rest.JobCancelling, rest.JobFailed},
	rest.JobRunning:    {rest.JobFinished, rest.JobFailing, rest.JobCancelling, rest.JobRestarting},
	rest.JobRestarting: {rest.JobRunning, rest.JobFailing, rest.JobCancelling},
	rest.JobFailing:    {rest.JobFailed},
	rest.JobCancelling: {rest.JobCanceled},
}

func allowed(from, to rest.JobState) bool {
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
	status   rest.JobState
	tasks    []rest.TaskState // by execution index
	live     int              // executions not yet terminal
	cause    error            // first failure
	failedAt int              // execution index of the first failure, -1 if none
}

func newJobState(executions int) *jobState {
	s := &jobState{status: rest.JobCreated, tasks: make([]rest.TaskState, executions), live: executions, failedAt: -1}
	for i := range s.tasks {
		s.tasks[i] = rest.TaskCreated
	}
	return s
}

func (s *jobState) setStatus(to rest.JobState) {
	if !allowed(s.status, to) {
		panic(fmt.Sprintf("jobmanager: job cannot go from %s to %s", s.status, to))
	}
	s.status = to
}

// start marks the job running once its tasks are deployed.
func (s *jobState) start() {
	if s.status == rest.JobCreated {
		s.setStatus(rest.JobRunning)
		s.settle() // a job without executions is done at once
	}
}

// readyToRestart reports whether a restarting job's executions have all
// ended, so the next attempt may be deployed.
func (s *jobState) readyToRestart() bool { return s.status == rest.JobRestarting && s.live == 0 }

// restart begins the next attempt of a restarting job: every execution is
// CREATED again.
func (s *jobState) restart() {
	if !s.readyToRestart() {
		panic(fmt.Sprintf("jobmanager: restart of a job that is %s with %d live executions", s.status, s.live))
	}
	s.setStatus(rest.JobRunning)
	for i := range s.tasks {
		s.tasks[i] = rest.TaskCreated
	}
	s.live = len(s.tasks)
	s.failedAt = -1
}

// cancel handles a user's cancel request; it returns the executions to cancel.
func (s *jobState) cancel() []int {
	if s.status.Terminal() || s.status == rest.JobCancelling || s.status == rest.JobFailing {
		return nil
	}
	s.setStatus(rest.JobCancelling)
	out := s.cancelLive(-1)
	s.settle() // nothing live: canceled at once
	return out
}

// fail fails the job for a reason outside any task (for example scheduling).
func (s *jobState) fail(err error) []int {
	if s.status.Terminal() || s.status == rest.JobFailing {
		return nil
	}
	if s.cause == nil || s.status == rest.JobRestarting {
		s.cause = err
	}
	if s.status == rest.JobCancelling {
		return nil
	}
	s.setStatus(rest.JobFailing)
	out := s.cancelLive(-1)
	s.settle()
	return out
}

// update records execution i reaching state st (with err for failures) and
// returns the executions to cancel as a consequence. A failure of a running
// job makes it RESTARTING when restart is true (the restart strategy
// allows it), FAILING otherwise.
func (s *jobState) update(i int, st rest.TaskState, err error, restart bool) []int {
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
	if st == rest.TaskFailed && (s.status == rest.JobRunning || s.status == rest.JobCreated) {
		s.cause, s.failedAt = err, i
		if restart && s.status == rest.JobRunning {
			s.setStatus(rest.JobRestarting)
		} else {
			s.setStatus(rest.JobFailing)
		}
		out = s.cancelLive(i)
	}
	s.settle()
	return out
}

func (s *jobState) cancelLive(except int) []int {
	var out []int
	for i, t := range s.tasks {
		if i != except && !t.Terminal() {
			s.tasks[i] = rest.TaskCanceling
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
	case rest.JobFailing:
		s.setStatus(rest.JobFailed)
	case rest.JobCancelling:
		s.setStatus(rest.JobCanceled)
	case rest.JobRunning:
		s.setStatus(rest.JobFinished)
	case rest.JobCreated:
		s.setStatus(rest.JobRunning)
		s.setStatus(rest.JobFinished)
	}
}
