package jobmanager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// Savepoints are checkpoints of kind coordinator.Savepoint forced through the
// job's coordinator: the tasks write them into the checkpoint storage as
// any checkpoint; when every task acknowledged, the JobManager copies what
// the checkpoint names into a folder of its own under the target directory
// (storage.WriteSavepoint, keys relative to the folder, _metadata last)
// instead of writing the checkpoint's metadata, then deletes the
// checkpoint's own objects. The coordinator keeps savepoints out of
// retention and subsumption and does not count their failures against
// the tolerable checkpoint failures.

// Errors of TriggerSavepoint, for the REST API's status codes.
var (
	// ErrJobNotRunning: only a running job can take a savepoint.
	ErrJobNotRunning = errors.New("job not running")
	// ErrSavepointInProgress: the job is taking a savepoint already.
	ErrSavepointInProgress = errors.New("a savepoint is in progress")
	// ErrBadSavepointRequest: the request is wrong (no target directory,
	// one that cannot be written, no checkpointing).
	ErrBadSavepointRequest = errors.New("bad savepoint request")
	// ErrSavepointRequestNotFound: no such request id is known (any more).
	ErrSavepointRequestNotFound = errors.New("savepoint request not found")
)

// maxSavepointRequests bounds the finished savepoint requests whose
// outcome the JobManager keeps for polling; the oldest are forgotten
// first. A request in progress is never forgotten.
const maxSavepointRequests = 100

// SavepointOptions is a savepoint request.
type SavepointOptions struct {
	// TargetDir is where the savepoint folder goes; "" takes the job's
	// default (CheckpointSpec.SavepointDir).
	TargetDir string
	// Native writes keyed state in the backend's own format (Pebble
	// files, copied into the folder); otherwise canonical.
	Native bool
	// Stop ends the job with the savepoint (stop-with-savepoint): sources
	// stop after its barrier; once it completes, tasks commit and finish.
	Stop bool
	// Drain, with Stop, makes sources send the maximum watermark before
	// the barrier, so every event-time timer and window fires first.
	Drain bool
	// Cancel cancels the job once the savepoint completed (Flink's
	// deprecated cancel-with-savepoint: the job ends CANCELED).
	Cancel bool
}

// SavepointStatus is the state of a savepoint request.
type SavepointStatus struct {
	RequestID string
	JobID     string
	Done      bool
	// Location is the savepoint folder's URL once done without error.
	Location string
	Err      error
	// CheckpointID is the savepoint's checkpoint id (0 until triggered).
	CheckpointID int64
}

// SavepointRequest is one savepoint request of a job.
type SavepointRequest struct {
	id     string
	jobID  string
	opts   SavepointOptions
	target string         // the target directory used
	store  *storage.Store // the savepoint folder
	// ckpt is the savepoint's checkpoint id once triggered (0 before).
	ckpt int64
	// writeErr is what the last savepoint write reported, for the reason
	// of an abort.
	writeErr error
	// writing: the savepoint is being written into store, which is
	// released (and, for a failed request, its folder removed) only after
	// the write returned.
	writing bool
	done    bool
	// polled is closed once a poll saw the request done.
	polled   chan struct{}
	location string
	err      error
	started  time.Time
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TriggerSavepoint starts a savepoint of a running job and returns its
// request id, to poll with Savepoint. The savepoint folder is created
// here, so a target directory that cannot be written fails the request at
// once; everything later is reported by Savepoint.
func (jm *JobManager) TriggerSavepoint(jobID string, opts SavepointOptions) (string, error) {
	target, err := jm.checkSavepointable(jobID, &opts)
	if err != nil {
		return "", err
	}
	if opts.Cancel && opts.Stop {
		return "", fmt.Errorf("%w: cancel-job and stop exclude each other", ErrBadSavepointRequest)
	}
	if opts.Drain && !opts.Stop {
		return "", fmt.Errorf("%w: drain needs stop (only a stopping job sends the maximum watermark)", ErrBadSavepointRequest)
	}
	// Opening the folder is I/O (an object store is remote): outside the lock.
	name := storage.SavepointDirName(jobID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := storage.OpenSavepointDir(ctx, target, name)
	if err != nil {
		return "", fmt.Errorf("%w: the savepoint target directory %q cannot be written: %v", ErrBadSavepointRequest, target, err)
	}
	jm.mu.Lock()
	j, ok := jm.jobs[jobID]
	refused := fmt.Errorf("%w: %s", ErrJobNotFound, jobID)
	if ok {
		refused = savepointableLocked(j)
	}
	if refused != nil {
		jm.mu.Unlock()
		// No savepoint will be written: the folder goes.
		discardSavepointFolder(st, jm.logger.Warn)
		return "", refused
	}
	defer jm.mu.Unlock()
	// The savepoint's writes count against the job's bound of checkpoint
	// write memory.
	if cs := j.spec.Checkpoints; cs != nil && cs.Store != nil {
		st.ShareWriteMemory(cs.Store)
	}
	r := &SavepointRequest{id: newRequestID(), jobID: jobID, opts: opts, target: target, store: st, started: jm.clockOf(j).Now(),
		polled: make(chan struct{})}
	jm.rememberSavepointLocked(r)
	j.savepoint = r
	jm.logger.Info("savepoint requested", "job", jobID, "request", r.id, "target", st.URL(), "native", opts.Native, "stop", opts.Stop, "drain", opts.Drain)
	jm.applyLocked(j, j.cp.coord.TriggerNow(j.spec.Clock.NowMillis(), coordinator.Savepoint))
	return r.id, nil
}

func (jm *JobManager) clockOf(j *job) interface{ Now() time.Time } { return j.spec.Clock }

// checkSavepointable checks what can be checked before opening the
// folder, and returns the target directory to use.
func (jm *JobManager) checkSavepointable(jobID string, opts *SavepointOptions) (string, error) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, ok := jm.jobs[jobID]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrJobNotFound, jobID)
	}
	if err := savepointableLocked(j); err != nil {
		return "", err
	}
	target := opts.TargetDir
	if target == "" {
		target = j.spec.Checkpoints.SavepointDir
	}
	if target == "" {
		return "", fmt.Errorf("%w: no target directory for the savepoint of job %s: give one (target-directory, weir savepoint --dir) or set state.savepoints.dir (weir run --savepoint-dir, Config.SavepointDir)", ErrBadSavepointRequest, jobID)
	}
	return target, nil
}

func savepointableLocked(j *job) error {
	if j.state.status != protocol.JobRunning {
		return fmt.Errorf("%w: job %s is %s; only a running job can take a savepoint", ErrJobNotRunning, j.spec.ID, j.state.status)
	}
	if j.cp == nil || j.cp.stopped {
		return fmt.Errorf("%w: job %s has no checkpoint coordinator (a batch job, which Flink cannot savepoint either, or one whose checkpointing ended); "+
			"run it in streaming mode", ErrBadSavepointRequest, j.spec.ID)
	}
	if r := j.savepoint; r != nil {
		return fmt.Errorf("%w: job %s is taking savepoint request %s (since %s); poll it and try again when it is done",
			ErrSavepointInProgress, j.spec.ID, r.id, r.started.UTC().Format(time.RFC3339))
	}
	return nil
}

// rememberSavepointLocked keeps r for polling, forgetting the oldest
// finished requests beyond maxSavepointRequests.
func (jm *JobManager) rememberSavepointLocked(r *SavepointRequest) {
	if jm.savepoints == nil {
		jm.savepoints = map[string]*SavepointRequest{}
	}
	jm.savepoints[r.id] = r
	jm.savepointOrder = append(jm.savepointOrder, r.id)
	for i := 0; len(jm.savepoints) > maxSavepointRequests && i < len(jm.savepointOrder); {
		old := jm.savepoints[jm.savepointOrder[i]]
		if old != nil && !old.done {
			i++
			continue
		}
		delete(jm.savepoints, jm.savepointOrder[i])
		jm.savepointOrder = append(jm.savepointOrder[:i], jm.savepointOrder[i+1:]...)
	}
}

// Savepoint returns the state of a savepoint request of a job.
func (jm *JobManager) Savepoint(jobID, requestID string) (SavepointStatus, error) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if _, ok := jm.jobs[jobID]; !ok {
		return SavepointStatus{}, fmt.Errorf("%w: %s", ErrJobNotFound, jobID)
	}
	r := jm.savepoints[requestID]
	if r == nil || r.jobID != jobID {
		return SavepointStatus{}, fmt.Errorf("%w: job %s has no savepoint request %s (the JobManager keeps the last %d)",
			ErrSavepointRequestNotFound, jobID, requestID, maxSavepointRequests)
	}
	if r.done {
		select {
		case <-r.polled:
		default:
			close(r.polled)
		}
	}
	return SavepointStatus{RequestID: r.id, JobID: r.jobID, Done: r.done, Location: r.location, Err: r.err, CheckpointID: r.ckpt}, nil
}

// endSavepointLocked ends the job's savepoint request in progress: with a
// location, or with err.
func (jm *JobManager) endSavepointLocked(j *job, location string, err error) {
	r := j.savepoint
	if r == nil {
		return
	}
	j.savepoint = nil
	r.done, r.location, r.err = true, location, err
	if err != nil {
		jm.logger.Warn("savepoint failed", "job", j.spec.ID, "request", r.id, "checkpoint", r.ckpt, "err", err)
	} else {
		jm.logger.Info("savepoint completed", "job", j.spec.ID, "request", r.id, "checkpoint", r.ckpt, "location", location)
	}
	if !r.writing {
		jm.releaseSavepointLocked(j, r)
	} // else writeSavepoint releases it
}

// releaseSavepointLocked closes the store of a savepoint request that
// ended, in the background, after removing the folder of a failed one: a
// failed savepoint leaves nothing (a folder holding a complete savepoint
// is kept all the same).
func (jm *JobManager) releaseSavepointLocked(j *job, r *SavepointRequest) {
	st, failed, log := r.store, r.err != nil, jm.logger
	j.io.Add(1)
	go func() {
		defer j.io.Done()
		if failed {
			discardSavepointFolder(st, log.Warn)
			return
		}
		st.Close()
	}()
}

// savepointTriggeredLocked binds the request in progress to the
// checkpoint id the coordinator gave it.
func (j *job) savepointTriggeredLocked(t coordinator.Trigger) *SavepointRequest {
	r := j.savepoint
	if t.Kind != coordinator.Savepoint || r == nil {
		return nil
	}
	if r.ckpt == 0 {
		r.ckpt = t.ID
	}
	if r.ckpt != t.ID {
		return nil
	}
	return r
}

// savepointOf returns the request in progress whose checkpoint is id.
func (j *job) savepointOf(id int64) *SavepointRequest {
	if r := j.savepoint; r != nil && r.ckpt == id {
		return r
	}
	return nil
}

// savepointFailedLocked ends the request in progress after its checkpoint
// was rejected or aborted.
func (jm *JobManager) savepointFailedLocked(j *job, id int64, reason string) {
	r := j.savepoint
	if r == nil || (id != 0 && r.ckpt != id) {
		return
	}
	err := fmt.Errorf("savepoint of job %s (checkpoint %d) failed: %s", j.spec.ID, r.ckpt, reason)
	if r.writeErr != nil {
		err = fmt.Errorf("savepoint of job %s (checkpoint %d) failed writing into %s: %w", j.spec.ID, r.ckpt, r.store.URL(), r.writeErr)
	}
	jm.endSavepointLocked(j, "", err)
}

// writeSavepoint copies checkpoint m into the savepoint folder of r (the
// Finalize step of a savepoint; see the top of this file).
func (jm *JobManager) writeSavepoint(j *job, r *SavepointRequest, m storage.Metadata, src *storage.Store) error {
	sm, err := storage.WriteSavepoint(context.Background(), src, m, r.store)
	if err == nil {
		// Resuming the job's latest snapshot must see this one (a stop's
		// savepoint is newer than the checkpoints before it, and its
		// commits are in the output).
		if err = storage.WriteSavepointPointer(context.Background(), src, sm, r.store.URL()); err != nil {
			err = fmt.Errorf("recording the savepoint in the checkpoint storage: %w", err)
		}
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if err != nil {
		r.writeErr = err
	}
	r.writing = false
	if r.done {
		// The request ended (failed) while it was written.
		jm.releaseSavepointLocked(j, r)
	}
	return err
}

// AwaitSavepointPolls waits, at most grace, until every completed
// stop-with-savepoint request of a job has been polled once: the job's end
// may take its REST API with it (an embedded cluster), and whoever stopped
// the job needs the savepoint's location.
func (jm *JobManager) AwaitSavepointPolls(jobID string, grace time.Duration) {
	jm.mu.Lock()
	var waits []chan struct{}
	for _, r := range jm.savepoints {
		if r.jobID == jobID && (r.opts.Stop || r.opts.Cancel) && r.done && r.err == nil {
			waits = append(waits, r.polled)
		}
	}
	jm.mu.Unlock()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for _, w := range waits {
		select {
		case <-w:
		case <-deadline.C:
			return
		}
	}
}
