package taskmanager

import (
	"fmt"
	"sync"

	"github.com/weirhq/weir/internal/protocol"
)

// JobBuilder makes, in a TaskManager's process, the job a RegisterJob
// message names: the embedded cluster finds the graph its process built
// already; a TaskManager process builds it from the message (a built-in
// job's name and arguments) and opens the checkpoint storage it names.
type JobBuilder interface {
	BuildJob(protocol.RegisterJob) (*Job, error)
}

// RegisterJob implements protocol.TaskManagerGateway: it builds the job
// here before any of its deployments arrive (one TaskManager's messages
// keep their order). A job that cannot be built is remembered with the
// reason, with which each of its deployments then fails; a registration
// of a job known already is ignored.
func (tm *TaskManager) RegisterJob(m protocol.RegisterJob) {
	tm.mu.Lock()
	_, known := tm.jobs[m.JobID]
	_, failed := tm.unbuilt[m.JobID]
	tm.mu.Unlock()
	if known || failed {
		return
	}
	j, err := tm.builder.BuildJob(m) // may do I/O: outside the lock
	if err == nil && j.ID != m.JobID {
		err = fmt.Errorf("the job builder returned job %s for job %s", j.ID, m.JobID)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if err != nil {
		tm.logger.Warn("cannot build job", "taskmanager", tm.id, "job", m.JobID, "name", m.Name, "err", err)
		tm.unbuilt[m.JobID] = fmt.Errorf("taskmanager %s cannot run job %q (%s): %w", tm.id, m.Name, m.JobID, err)
		return
	}
	tm.jobs[m.JobID] = j
}

// ReleaseJob implements protocol.TaskManagerGateway. For a job that ended
// it also forgets the job, cancels any execution of it still here (none
// should be: the JobManager ends a job once every execution has ended) and,
// once they have returned, calls the job's Release.
func (tm *TaskManager) ReleaseJob(r protocol.ReleaseJob) {
	tm.shuffle.Release(r.JobID, r.Attempt)
	tm.releaseData(r)
	if !r.Ended {
		return
	}
	tm.mu.Lock()
	j := tm.jobs[r.JobID]
	delete(tm.jobs, r.JobID)
	delete(tm.unbuilt, r.JobID)
	delete(tm.attempts, r.JobID)
	var left []*running
	for e, t := range tm.tasks {
		if e.Job == r.JobID {
			t.once.Do(func() { close(t.cancel) })
			left = append(left, t)
			delete(tm.tasks, e)
		}
	}
	for e := range tm.early {
		if e.Job == r.JobID {
			delete(tm.early, e)
		}
	}
	tm.mu.Unlock()
	if j == nil || j.Release == nil {
		return
	}
	go func() {
		for _, t := range left {
			<-t.done
		}
		j.Release()
	}()
}

// LocalJobs is the JobBuilder of TaskManagers in the process that submits
// the job (the embedded cluster): that process built the job's graph and
// opened its storage already, and adds the job here before submitting it.
type LocalJobs struct {
	mu   sync.Mutex
	jobs map[string]*Job
}

// Add makes j known to BuildJob until Remove.
func (l *LocalJobs) Add(j *Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.jobs == nil {
		l.jobs = map[string]*Job{}
	}
	l.jobs[j.ID] = j
}

// Remove forgets job id.
func (l *LocalJobs) Remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.jobs, id)
}

// BuildJob implements JobBuilder: the job added under m's id.
func (l *LocalJobs) BuildJob(m protocol.RegisterJob) (*Job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if j := l.jobs[m.JobID]; j != nil {
		return j, nil
	}
	if m.Program != "" {
		return nil, fmt.Errorf("job %s is built from program %q, which runs in TaskManager processes; this TaskManager runs in the process that submits jobs", m.JobID, m.Program)
	}
	return nil, fmt.Errorf("job %s was not added to this process's TaskManagers", m.JobID)
}
