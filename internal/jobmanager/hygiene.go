package jobmanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// Storage hygiene: what the JobManager deletes from the checkpoint storage
// besides the checkpoints its coordinator discards.
//
//   - Earlier runs of the lineage (storage.ScanLineage), when the job
//     continues them (CheckpointSpec.ContinueLineage): when the job starts,
//     their incomplete checkpoints (their JobManager is gone: they can never
//     complete) and the shared files none of their complete checkpoints
//     references; their complete checkpoints count towards Retained, newest
//     first across the lineage, and those beyond it are deleted (at the
//     start, and as this run's checkpoints complete); a run left without a
//     complete checkpoint is deleted whole. The checkpoint the job restored
//     from is kept until one of the job's own completes.
//   - The job's own leftovers, swept in rounds (sweep): a shared file that a
//     task uploaded for a checkpoint that never completed, or that an earlier
//     attempt uploaded, and a chk-<n> a late upload recreated after its
//     checkpoint was aborted. A task refers again to every shared file it has
//     uploaded while the file is in its Pebble instance, so a file that no
//     retained checkpoint references may still be referenced by the next
//     one: a listing is only acted on once a checkpoint triggered after it
//     completed and none older is in flight. That checkpoint's tasks
//     snapshotted after every upload the listing saw, so a listed file it does
//     not reference is gone from its Pebble instance, and no later checkpoint
//     can reference it.
//   - At the end of the job (sweepShared), the shared files and incomplete
//     checkpoints of the job no complete checkpoint needs.

// identityOf is the run's identity in the checkpoint storage
// (storage.RunIdentity): what its checkpoints' metadata and its JobInfo
// name, and what storage.OfLineage compares.
func identityOf(spec *JobSpec) storage.Metadata {
	return storage.Metadata{JobID: spec.ID, JobName: spec.Name, Lineage: spec.Lineage}
}

// writeJobInfo writes the job's storage.JobInfo before anything else of
// the job goes into the checkpoint storage, so that a later run of its
// lineage recognizes the job's directory even if no checkpoint completes.
// Without it only that is lost: a failure is logged.
func (jm *JobManager) writeJobInfo(spec *JobSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := storage.WriteJobInfo(ctx, spec.Checkpoints.Store, identityOf(spec)); err != nil {
		jm.logger.Warn("writing the job's info into the checkpoint storage failed: if the job dies before a checkpoint completes, later runs will not recognize its directory",
			"job", spec.ID, "err", err)
	}
}

// cleanup is a batch of deletions in the checkpoint storage.
type cleanup struct {
	checkpoints []discarded        // complete checkpoints, with the shared files only they referenced
	incomplete  []storage.Metadata // checkpoints without metadata (JobID, CheckpointID)
	objects     []string           // single objects (shared files)
	runs        []deadRun          // earlier runs deleted whole
}

type discarded struct {
	m      storage.Metadata
	shared []string
}

type deadRun struct {
	jobID   string
	objects []string
	keep    func(string) bool
}

func (c *cleanup) empty() bool {
	return len(c.checkpoints)+len(c.incomplete)+len(c.objects)+len(c.runs) == 0
}

// run carries out c: each run's deletions go on past failures of the
// others; failures only leave files behind and are returned joined.
func (c *cleanup) run(ctx context.Context, s *storage.Store) error {
	var errs []error
	for _, d := range c.checkpoints {
		errs = append(errs, storage.Discard(ctx, s, d.m, d.shared))
	}
	for _, m := range c.incomplete {
		errs = append(errs, storage.DiscardIncomplete(ctx, s, m.JobID, m.CheckpointID))
	}
	errs = append(errs, storage.DeleteObjects(ctx, s, c.objects))
	for _, r := range c.runs {
		errs = append(errs, storage.DeleteRun(ctx, s, r.jobID, r.objects, r.keep))
	}
	return errors.Join(errs...)
}

// cleanupLocked carries out c in the background (counted in j.io).
func (jm *JobManager) cleanupLocked(j *job, c cleanup) {
	if c.empty() {
		return
	}
	store, log := j.cp.store, jm.logger
	j.io.Add(1)
	go func() {
		defer j.io.Done()
		if err := c.run(context.Background(), store); err != nil {
			log.Warn("deleting checkpoints of earlier runs failed; files are left behind", "job", j.spec.ID, "err", err)
		}
	}()
}

// cleanLineage looks for the earlier runs of the job's lineage in its
// checkpoint storage, deletes what none of their complete checkpoints
// needs and what retention no longer keeps, and hands their complete
// checkpoints to retention (trimEarlierLocked). It runs in the background
// (counted in j.io) when a job that continues its lineage starts.
func (jm *JobManager) cleanLineage(j *job) {
	defer j.io.Done()
	ctx := context.Background()
	store, me := j.spec.Checkpoints.Store, identityOf(j.spec)
	runs, err := storage.ScanLineage(ctx, store, &me, jm.logger)
	if err != nil {
		jm.logger.Warn("looking for earlier runs of the job in the checkpoint storage failed; their files are kept",
			"job", me.JobID, "name", me.JobName, "store", store.URL(), "err", err)
		return
	}
	jm.mu.Lock()
	cp := j.cp
	var c cleanup
	kept := 0
	for _, r := range runs {
		if r.Unreadable > 0 {
			// What its unreadable checkpoints reference is unknown (a
			// newer format, or damage): only its incomplete checkpoints go.
			jm.logger.Warn("an earlier run holds checkpoints whose metadata cannot be read: it is kept; remove it by hand if it is not needed",
				"job", me.JobID, "earlier_run", r.JobID, "store", store.URL(), "unreadable", r.Unreadable)
			for _, id := range r.Incomplete {
				c.incomplete = append(c.incomplete, storage.Metadata{JobID: r.JobID, CheckpointID: id})
			}
			kept += len(r.Complete)
			continue
		}
		cp.earlierRuns[r.JobID] = r.Objects
		cp.earlier = append(cp.earlier, r.Complete...)
	}
	slices.SortFunc(cp.earlier, func(a, b storage.Metadata) int { return storage.Newer(&a, &b) })
	cp.scanned = true
	refs := &refSet{cp: cp}
	trim := jm.trimEarlierLocked(j, refs)
	c.checkpoints, c.runs = trim.checkpoints, trim.runs
	for _, r := range runs {
		if _, live := cp.earlierRuns[r.JobID]; !live {
			continue // deleted whole, or kept whole
		}
		for _, id := range r.Incomplete {
			c.incomplete = append(c.incomplete, storage.Metadata{JobID: r.JobID, CheckpointID: id})
		}
		for _, k := range r.Objects {
			if strings.HasPrefix(k, storage.SharedPrefix(r.JobID)) && !refs.hasLocked(k) {
				c.objects = append(c.objects, k)
			}
		}
	}
	kept += len(cp.earlier)
	jm.mu.Unlock()
	if err := c.run(ctx, store); err != nil {
		jm.logger.Warn("cleaning up earlier runs of the job failed; files are left behind", "job", me.JobID, "err", err)
	}
	jm.logger.Info("earlier runs of the job cleaned up", "job", me.JobID, "name", me.JobName, "store", store.URL(),
		"runs", len(runs), "runs_deleted", len(c.runs), "checkpoints_deleted", len(c.checkpoints), "checkpoints_kept", kept,
		"incomplete_deleted", len(c.incomplete), "shared_deleted", len(c.objects))
}

// trimEarlierLocked applies retention across the lineage: the job's own
// retained checkpoints are the newest, and the earlier runs' complete
// checkpoints fill the rest of Settings.Retained, newest first. It returns
// the deletions of those beyond it, and of the earlier runs left without a
// complete checkpoint (whole). The checkpoint the job restored from stays
// until one of the job's own completed. refs is looked at only when
// something is deleted.
func (jm *JobManager) trimEarlierLocked(j *job, refs *refSet) cleanup {
	cp := j.cp
	var c cleanup
	if !cp.scanned {
		return c
	}
	room := cp.coord.Settings().Retained - len(cp.coord.Retained())
	var kept, gone []storage.Metadata
	for i, m := range cp.earlier {
		if len(cp.earlier)-i <= room || jm.restoredLocked(j, &m) {
			kept = append(kept, m)
		} else {
			gone = append(gone, m)
		}
	}
	cp.earlier = kept
	cp.runCheckpoints = map[string][]int64{}
	for _, m := range kept {
		cp.runCheckpoints[m.JobID] = append(cp.runCheckpoints[m.JobID], m.CheckpointID)
	}
	for jobID, objects := range cp.earlierRuns {
		if len(cp.runCheckpoints[jobID]) == 0 {
			if cp.latest == nil && slices.ContainsFunc(objects, storage.IsSavepointPointer) {
				// Its savepoint (a stop's) may be the lineage's newest
				// snapshot, which --from latest finds through the
				// pointer: the run stays until one of this job's
				// checkpoints completes.
				continue
			}
			c.runs = append(c.runs, deadRun{jobID: jobID, objects: objects, keep: refs.lookupLocked()})
			delete(cp.earlierRuns, jobID)
		}
	}
	dead := func(jobID string) bool {
		_, live := cp.earlierRuns[jobID]
		return !live
	}
	for _, m := range gone {
		if dead(m.JobID) {
			continue
		}
		var shared []string
		for _, k := range m.SharedKeys() {
			if !refs.hasLocked(k) {
				shared = append(shared, k)
			}
		}
		c.checkpoints = append(c.checkpoints, discarded{m: m, shared: shared})
	}
	return c
}

// restoredLocked reports whether m is the checkpoint the job restored from
// and none of the job's own has completed since.
func (jm *JobManager) restoredLocked(j *job, m *storage.Metadata) bool {
	r := j.restore
	return j.cp.latest == nil && r != nil && j.restoreStore != nil && j.restoreStore.URL() == j.cp.store.URL() &&
		r.JobID == m.JobID && r.CheckpointID == m.CheckpointID && !r.Savepoint
}

// refSet is the set of shared files that a retained checkpoint (the job's
// own or an earlier run's) or what the tasks acknowledged of a checkpoint
// in flight references. Gathering it walks every retained checkpoint's
// keys under the JobManager's lock, so it is built on first use: once for
// the hygiene after a completion (afterCompletedLocked) or a lineage scan,
// and not at all when nothing is to be deleted. A refSet lives only as long
// as the lock is held; what lookupLocked returns may outlive it.
type refSet struct {
	cp   *checkpoints
	keys map[string]bool // nil until built
}

func (r *refSet) keysLocked() map[string]bool {
	if r.keys == nil {
		r.keys = r.cp.referencedLocked()
	}
	return r.keys
}

// hasLocked reports whether shared file k is referenced.
func (r *refSet) hasLocked(k string) bool { return r.keysLocked()[k] }

// lookupLocked returns hasLocked as a function that may be called off the
// lock (the set is built before it returns and never changes).
func (r *refSet) lookupLocked() func(string) bool {
	keys := r.keysLocked()
	return func(k string) bool { return keys[k] }
}

// referencedLocked gathers the shared files refSet holds.
func (cp *checkpoints) referencedLocked() map[string]bool {
	refs := map[string]bool{}
	for _, m := range cp.earlier {
		for _, k := range m.SharedKeys() {
			refs[k] = true
		}
	}
	for _, p := range cp.pending {
		for _, k := range sharedKeys(p) {
			refs[k] = true
		}
	}
	// A copy, not the registry itself: deletions run off the lock while
	// checkpoints complete. What a checkpoint registers after this cannot
	// be a file the caller deletes: those are earlier runs' files and the
	// job's files of checkpoints that ended, and a restored job's first
	// checkpoint uploads everything anew (no-claim).
	for _, k := range cp.registry.ReferencedKeys() {
		refs[k] = true
	}
	return refs
}

// sweepGap is the least time between two rounds of sweeping: a round lists
// the job's shared files (a LIST request per thousand on S3), and with
// checkpoints every few milliseconds a round per checkpoint would list
// all the time for a few files.
const sweepGap = time.Second

// sweepList is a listing of the job's own objects, for a round of sweeping.
type sweepList struct {
	// before: every object listed was written for a checkpoint with a
	// lower id (or by an earlier attempt).
	before int64
	shared []string // under the job's shared/
	dirs   []int64  // chk-<n> directories
}

// maybeSweepLocked runs a round of sweeping after checkpoint completed
// completed: if the last listing may be acted on (see the top of this
// file), it deletes what is listed there and no retained or in-flight
// checkpoint needs (refs); then it lists again, for the next round. One
// round at a time, in the background (counted in j.io).
func (jm *JobManager) maybeSweepLocked(j *job, completed int64, refs *refSet) {
	cp := j.cp
	now := j.spec.Clock.NowMillis()
	if cp.sweeping || cp.stopped || now < cp.nextSweep {
		return
	}
	var del []string
	var dirs []int64
	if l := cp.swept; l != nil {
		if completed < l.before || cp.inFlightBelowLocked(completed) {
			return // a later completion will do
		}
		for _, k := range l.shared {
			if !refs.hasLocked(k) {
				del = append(del, k)
			}
		}
		for _, id := range l.dirs {
			if cp.completed[id] == nil && cp.pending[id] == nil && !cp.writing[id] {
				dirs = append(dirs, id)
			}
		}
		cp.swept = nil
	}
	cp.sweeping = true
	cp.nextSweep = now + sweepGap.Milliseconds()
	store, job, log := cp.store, j.spec.ID, jm.logger
	j.io.Add(1)
	go func() {
		defer j.io.Done()
		ctx := context.Background()
		errs := []error{storage.DeleteObjects(ctx, store, del)}
		for _, id := range dirs {
			errs = append(errs, storage.DiscardIncomplete(ctx, store, job, id))
		}
		shared, lerr := storage.ListAll(ctx, store, storage.SharedPrefix(job))
		ids, ierr := storage.CheckpointIDs(ctx, store, job)
		// A job folder gone meanwhile (the job ended and discarded its
		// checkpoints) has nothing left to sweep.
		if errors.Is(lerr, storage.ErrNotFound) {
			shared, lerr = nil, nil
		}
		if errors.Is(ierr, storage.ErrNotFound) {
			ids, ierr = nil, nil
		}
		jm.mu.Lock()
		cp.sweeping = false
		if lerr == nil && ierr == nil {
			cp.swept = &sweepList{before: cp.triggered + 1, shared: shared, dirs: ids}
		}
		jm.mu.Unlock()
		if err := errors.Join(append(errs, lerr, ierr)...); err != nil {
			log.Warn("sweeping the job's unreferenced checkpoint files failed; files are left behind", "job", job, "err", err)
		} else if len(del)+len(dirs) > 0 {
			log.Debug("swept unreferenced checkpoint files", "job", job, "shared", len(del), "incomplete", len(dirs))
		}
	}()
}

// inFlightBelowLocked reports whether a checkpoint with an id below id is
// in flight or its metadata is being written.
func (cp *checkpoints) inFlightBelowLocked(id int64) bool {
	for p := range cp.pending {
		if p < id {
			return true
		}
	}
	for w := range cp.writing {
		if w < id {
			return true
		}
	}
	return false
}

// afterCompletedLocked is the hygiene after checkpoints completed (the
// newest is newest): retention across the lineage, and a round of
// sweeping, which share one refSet.
func (jm *JobManager) afterCompletedLocked(j *job, newest int64) {
	refs := &refSet{cp: j.cp}
	jm.cleanupLocked(j, jm.trimEarlierLocked(j, refs))
	jm.maybeSweepLocked(j, newest, refs)
}

// discardSavepointFolder removes what a failed savepoint left in its folder
// (and the folder), then closes its store. A folder holding a complete
// savepoint is kept.
func discardSavepointFolder(st *storage.Store, logf func(msg string, args ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := storage.DiscardSavepointDir(ctx, st); err != nil && !errors.Is(err, storage.ErrCompleteSavepoint) {
		logf("removing the folder of a failed savepoint failed", "folder", st.URL(), "err", err)
	}
	st.Close()
}
