package jobmanager

import (
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
)

// The job and execution states are Flink's, defined once in internal/rest
// (the names Flink's REST API and tools use): protocol.JobState, protocol.TaskState.

// jobTransitions lists the allowed job state changes.
var jobTransitions = map[protocol.JobState][]protocol.JobState{
	protocol.JobCreated:    {protocol.JobRunning, protocol.JobFailing, protocol.JobCancelling, protocol.JobFailed},
	protocol.JobRunning:    {protocol.JobFinished, protocol.JobFailing, protocol.JobCancelling, protocol.JobRestarting},
	protocol.JobRestarting: {protocol.JobRunning, protocol.JobFailing, protocol.JobCancelling},
	protocol.JobFailing:    {protocol.JobFailed},
	protocol.JobCancelling: {protocol.JobCanceled},
}

func allowed(from, to protocol.JobState) bool {
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
	status   protocol.JobState
	tasks    []protocol.TaskState // by execution index
	live     int                  // executions not yet terminal
	cause    error                // first failure
	failedAt int                  // execution index of the first failure, -1 if none
}

func newJobState(executions int) *jobState {
	s := &jobState{status: protocol.JobCreated, tasks: make([]protocol.TaskState, executions), live: executions, failedAt: -1}
	for i := range s.tasks {
		s.tasks[i] = protocol.TaskCreated
	}
	return s
}

func (s *jobState) setStatus(to protocol.JobState) {
	if !allowed(s.status, to) {
		panic(fmt.Sprintf("jobmanager: job cannot go from %s to %s", s.status, to))
	}
	s.status = to
}

// start marks the job running once its tasks are deployed.
func (s *jobState) start() {
	if s.status == protocol.JobCreated {
		s.setStatus(protocol.JobRunning)
		s.settle() // a job without executions is done at once
	}
}

// readyToRestart reports whether a restarting job's executions have all
// ended, so the next attempt may be deployed.
func (s *jobState) readyToRestart() bool { return s.status == protocol.JobRestarting && s.live == 0 }

// restart begins the next attempt of a restarting job: every execution is
// CREATED again.
func (s *jobState) restart() {
	if !s.readyToRestart() {
		panic(fmt.Sprintf("jobmanager: restart of a job that is %s with %d live executions", s.status, s.live))
	}
	s.setStatus(protocol.JobRunning)
	for i := range s.tasks {
		s.tasks[i] = protocol.TaskCreated
	}
	s.live = len(s.tasks)
	s.failedAt = -1
}

// cancel handles a user's cancel request; it returns the executions to cancel.
func (s *jobState) cancel() []int {
	if s.status.Terminal() || s.status == protocol.JobCancelling || s.status == protocol.JobFailing {
		return nil
	}
	s.setStatus(protocol.JobCancelling)
	out := s.cancelLive(-1)
	s.settle() // nothing live: canceled at once
	return out
}

// fail fails the job for a reason outside any task (for example scheduling).
func (s *jobState) fail(err error) []int {
	if s.status.Terminal() || s.status == protocol.JobFailing {
		return nil
	}
	if s.cause == nil || s.status == protocol.JobRestarting {
		s.cause = err
	}
	if s.status == protocol.JobCancelling {
		return nil
	}
	s.setStatus(protocol.JobFailing)
	out := s.cancelLive(-1)
	s.settle()
	return out
}

// update records execution i reaching state st (with err for failures) and
// returns the executions to cancel as a consequence. A failure of a running
// job makes it RESTARTING when restart is true (the restart strategy
// allows it), FAILING otherwise.
func (s *jobState) update(i int, st protocol.TaskState, err error, restart bool) []int {
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
	if st == protocol.TaskFailed && (s.status == protocol.JobRunning || s.status == protocol.JobCreated) {
		s.cause, s.failedAt = err, i
		if restart && s.status == protocol.JobRunning {
			s.setStatus(protocol.JobRestarting)
		} else {
			s.setStatus(protocol.JobFailing)
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
			s.tasks[i] = protocol.TaskCanceling
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
	case protocol.JobFailing:
		s.setStatus(protocol.JobFailed)
	case protocol.JobCancelling:
		s.setStatus(protocol.JobCanceled)
	case protocol.JobRunning:
		s.setStatus(protocol.JobFinished)
	case protocol.JobCreated:
		s.setStatus(protocol.JobRunning)
		s.setStatus(protocol.JobFinished)
	}
}
