package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/protocol"
)

// checkpoints drives a job's checkpoint coordinator: it carries out the
// coordinator's decisions (triggers, metadata writes, notifications,
// deletions) and feeds it acknowledgements, declines and its timer.
type checkpoints struct {
	coord *coordinator.Coordinator
	store *storage.Store
	// pending holds what the tasks acknowledged for each checkpoint in
	// flight, and the coordinators' state snapshotted at its trigger.
	pending map[int64]*pendingCheckpoint
	// completed are the retained checkpoints; latest is the newest.
	completed map[int64]*storage.Metadata
	latest    *storage.Metadata
	// restartWaits: the current attempt's restart waits for the metadata
	// writes in flight.
	restartWaits bool
	registry     *storage.Registry
	// sources are the executions that triggers go to; sourcesEnded those
	// that read all their input (the final checkpoint waits for all).
	sources      []coordinator.TaskID
	sourcesEnded map[int]bool
	// writing holds checkpoints whose metadata write is running; discard
	// marks those that were aborted meanwhile (delete after the write).
	writing map[int64]bool
	discard map[int64]bool
	// unsure holds checkpoints whose record as completed failed
	// (CheckpointSpec.Completed): the store may have taken it all the
	// same (a timeout after the write reached it), so a later leader may
	// restore them; their files are never deleted here.
	unsure map[int64]bool
	// wake is the coordinator's next deadline; gen invalidates old timers
	// and closing stopTimer ends the goroutine of the armed one.
	wake      int64
	gen       int
	stopTimer chan struct{}
	stopped   bool
	// restoredFrom is the checkpoint the current attempt restored (0: none).
	restoredFrom int64
	// finalRequested: a final checkpoint was requested and neither
	// completed nor failed yet.
	finalRequested bool
	// acks keeps, for the recent checkpoints (at most maxAckHistory), what
	// each execution reported, for the REST API; ackOrder is their order.
	acks     map[int64]map[int]protocol.CheckpointMetrics
	ackOrder []int64
	// restoredAt is when the current attempt restored (epoch ms).
	restoredAt int64
	// triggered is the highest checkpoint id triggered (or restored from).
	triggered int64

	// Storage hygiene (hygiene.go). earlier are the retained complete
	// checkpoints of earlier runs of the lineage, oldest first, once
	// scanned (cleanLineage); earlierRuns the objects of each earlier run
	// that may be deleted whole once none of its checkpoints is retained,
	// by job ID; runCheckpoints the ids of the retained ones, by job ID.
	earlier        []storage.Metadata
	earlierRuns    map[string][]string
	runCheckpoints map[string][]int64
	scanned        bool
	// sweeping: a round of sweeping runs; swept is the listing the next
	// round acts on (nil: none yet).
	sweeping bool
	swept    *sweepList
	// nextSweep is when the next round may start (epoch ms, sweepGap).
	nextSweep int64
}

// maxAckHistory bounds the checkpoints whose per-subtask acknowledgements
// the REST API can show.
const maxAckHistory = 20

func (cp *checkpoints) recordAck(id int64, i int, m protocol.CheckpointMetrics) {
	if cp.acks == nil {
		cp.acks = map[int64]map[int]protocol.CheckpointMetrics{}
	}
	a, ok := cp.acks[id]
	if !ok {
		a = map[int]protocol.CheckpointMetrics{}
		cp.acks[id] = a
		cp.ackOrder = append(cp.ackOrder, id)
		if len(cp.ackOrder) > maxAckHistory {
			delete(cp.acks, cp.ackOrder[0])
			cp.ackOrder = cp.ackOrder[1:]
		}
	}
	a[i] = m
}

type pendingCheckpoint struct {
	trigger    coordinator.Trigger
	coordState map[string][]byte
	acks       map[int]protocol.AcknowledgeCheckpoint
	metadata   *storage.Metadata // built at Finalize
}

// coordStateV1 begins every coordinator state stored in a checkpoint.
const coordStateV1 = 1

// sourceTasks lists the executions whose chain starts with a source.
func (j *job) sourceTasks() []coordinator.TaskID {
	var out []coordinator.TaskID
	for i, e := range j.execs {
		if n := j.spec.Graph.Vertices[e.Vertex].Nodes[0]; n.IsSource {
			out = append(out, coordinator.TaskID(i))
		}
	}
	return out
}

// startCheckpoints creates the job's coordinator. Ids continue after the
// checkpoint the job restores from.
func (jm *JobManager) startCheckpoints(j *job) error {
	s := j.spec.Checkpoints
	settings := s.Settings.WithDefaults()
	if err := settings.Validate(); err != nil {
		return err
	}
	if s.SavepointsOnly && settings.Interval != 0 {
		return fmt.Errorf("a job that takes only savepoints has no checkpoint interval, got %d ms", settings.Interval)
	}
	next := int64(1)
	cp := &checkpoints{store: s.Store, pending: map[int64]*pendingCheckpoint{}, completed: map[int64]*storage.Metadata{},
		registry: &storage.Registry{}, sourcesEnded: map[int]bool{}, writing: map[int64]bool{}, discard: map[int64]bool{}, unsure: map[int64]bool{},
		earlierRuns: map[string][]string{}}
	if m := j.restore; m != nil {
		next = m.CheckpointID + 1
		cp.triggered = m.CheckpointID
		cp.restoredFrom, cp.restoredAt = m.CheckpointID, j.spec.Clock.NowMillis()
	}
	next = max(next, s.FirstID)
	cp.sources = j.sourceTasks()
	now := j.spec.Clock.NowMillis()
	cp.coord = coordinator.New(settings, len(j.execs), cp.sources, next, now)
	j.cp = cp
	jm.applyLocked(j, cp.coord.Tick(now))
	return nil
}

func (jm *JobManager) suspendCheckpointsLocked(j *job) {
	if j.cp.stopped {
		return
	}
	jm.applyLocked(j, j.cp.coord.Suspend(j.spec.Clock.NowMillis()))
}

func (jm *JobManager) resumeCheckpointsLocked(j *job) {
	cp := j.cp
	cp.sourcesEnded = map[int]bool{}
	cp.finalRequested = false
	if j.restore != nil {
		cp.restoredFrom, cp.restoredAt = j.restore.CheckpointID, j.spec.Clock.NowMillis()
	}
	now := j.spec.Clock.NowMillis()
	jm.applyLocked(j, cp.coord.Resume(now, len(j.execs), cp.sources))
	jm.applyLocked(j, cp.coord.Tick(now))
}

func (jm *JobManager) stopCheckpointsLocked(j *job) {
	jm.suspendCheckpointsLocked(j)
	j.cp.stopped = true
	j.cp.gen++
}

// applyLocked carries out a coordinator output in the order it documents.
func (jm *JobManager) applyLocked(j *job, out coordinator.Output) {
	cp := j.cp
	now := j.spec.Clock.NowMillis()
	if n := len(out.Completed); n > 0 {
		// After the deletions Discard asks for (below), as they are
		// deferred in order.
		defer jm.afterCompletedLocked(j, slices.Max(out.Completed))
	}
	for _, id := range out.Completed {
		p := cp.pending[id]
		delete(cp.pending, id)
		if p == nil || p.metadata == nil {
			continue
		}
		m := p.metadata
		cp.completed[id], cp.latest = m, m
		cp.registry.Register(id, sharedKeys(p))
		final := len(p.acks) == len(j.execs)
		for _, a := range p.acks {
			final = final && a.Metrics.Finished
		}
		jm.logger.Info("checkpoint completed", "job", j.spec.ID, "checkpoint", id, "final", final)
		if j.spec.OnCheckpoint != nil {
			j.spec.OnCheckpoint(id, final)
		}
		jm.notifyLocked(j, id, true, final)
		if !final && len(cp.sourcesEnded) == len(cp.sources) {
			// Some task took it before it finished (an unaligned barrier
			// can overtake the end of data): the next one is final.
			cp.finalRequested = false
			defer jm.maybeFinalCheckpointLocked(j)
		}
	}
	for _, id := range out.Savepoints {
		delete(cp.pending, id)
		if r := j.savepointOf(id); r != nil {
			if r.opts.Stop {
				// Stop with savepoint: sinks commit it, then every task
				// ends FINISHED (protocol.NotifyCheckpoint.Terminate).
				jm.terminateLocked(j, id)
			}
			jm.endSavepointLocked(j, r.store.URL(), nil)
			if r.opts.Cancel {
				// Not inline: Cancel takes the lock this runs under.
				go jm.Cancel(j.spec.ID)
			}
		}
		// The savepoint folder holds a copy: the checkpoint's own objects go
		// (shared files stay: later checkpoints may reference them).
		jm.deleteLocked(j, storage.Metadata{JobID: j.spec.ID, CheckpointID: id}, nil)
	}
	for _, r := range out.Rejected {
		if r.Kind == coordinator.Final {
			cp.finalRequested = false
		}
		if r.Kind == coordinator.Savepoint {
			jm.savepointFailedLocked(j, 0, r.Reason)
		}
	}
	for _, a := range out.Aborted {
		if a.Kind == coordinator.Final {
			cp.finalRequested = false
		}
		delete(cp.pending, a.ID)
		if a.Kind == coordinator.Savepoint {
			if r := j.savepointOf(a.ID); r != nil && r.opts.Stop && !a.NotifyTasks {
				// The sources stopped at its barrier: they go on.
				jm.notifyLocked(j, a.ID, false, false)
			}
			jm.savepointFailedLocked(j, a.ID, a.Reason)
		}
		if a.NotifyTasks {
			jm.notifyLocked(j, a.ID, false, false)
		}
		jm.logger.Info("checkpoint aborted", "job", j.spec.ID, "checkpoint", a.ID, "reason", a.Reason)
		switch {
		case cp.writing[a.ID]:
			cp.discard[a.ID] = true
		case cp.unsure[a.ID]:
			delete(cp.unsure, a.ID)
			jm.logger.Warn("checkpoint aborted, its files kept: recording it as completed failed, and the HA store may hold it as the job's latest all the same",
				"job", j.spec.ID, "checkpoint", a.ID)
		default:
			jm.deleteLocked(j, storage.Metadata{JobID: j.spec.ID, CheckpointID: a.ID}, nil)
		}
	}
	for _, id := range out.Discard {
		m := cp.completed[id]
		delete(cp.completed, id)
		if m == nil {
			continue
		}
		jm.deleteLocked(j, *m, cp.registry.Discard(id))
	}
	for _, id := range out.Finalize {
		p := cp.pending[id]
		if p == nil {
			continue
		}
		p.metadata = jm.metadataLocked(j, id, p, now)
		cp.writing[id] = true
		m, store := *p.metadata, cp.store
		sp := j.savepointOf(id)
		if sp != nil {
			sp.writing = true
		}
		j.io.Add(1)
		go func() {
			defer j.io.Done()
			var err error
			if f := j.spec.Checkpoints.Fence; f != nil {
				// A store error fails this checkpoint only; a lost
				// lease ends the job.
				if err = f(context.Background(), id); errors.Is(err, storage.ErrLeaseLost) {
					jm.Fail(j.spec.ID, err)
				}
			}
			var path string
			switch {
			case err != nil:
			case sp != nil:
				err, path = jm.writeSavepoint(j, sp, m, store), sp.store.URL()
			default:
				err = storage.WriteMetadata(context.Background(), store, m)
				path = store.URL() + "/" + m.JobID + "/" + storage.CheckpointDir(id)
			}
			var recorded *storage.Metadata
			unsure := false
			if f := j.spec.Checkpoints.Completed; err == nil && f != nil {
				if err = f(context.Background(), id, path); err != nil {
					err, unsure = fmt.Errorf("recording checkpoint %d as completed: %w", id, err), true
				} else {
					recorded = &m
				}
			}
			jm.finalized(j, id, err, recorded, unsure)
		}()
	}
	for _, t := range out.Trigger {
		jm.triggerLocked(j, t)
	}
	if out.FailJob != "" {
		jm.failFromCoordinatorLocked(j, errors.New(out.FailJob))
	}
	if len(out.Aborted)+len(out.Rejected) > 0 {
		jm.maybeFinalCheckpointLocked(j) // a failed final checkpoint is retried
	}
	if out.WakeAt > 0 && out.WakeAt != cp.wake && !cp.stopped {
		cp.wake = out.WakeAt
		cp.gen++
		if cp.stopTimer != nil {
			close(cp.stopTimer)
		}
		gen, stop := cp.gen, make(chan struct{})
		cp.stopTimer = stop
		tm := j.spec.Clock.NewTimer(msDuration(out.WakeAt - now))
		go func() {
			select {
			case <-tm.C():
			case <-stop:
				tm.Stop()
				return
			case <-j.done:
				tm.Stop()
				return
			}
			jm.tick(j, gen)
		}()
	}
}

func (jm *JobManager) tick(j *job, gen int) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if j.cp.gen != gen || j.cp.stopped {
		return
	}
	j.cp.wake = 0
	jm.applyLocked(j, j.cp.coord.Tick(j.spec.Clock.NowMillis()))
}

// finalized reports the end of a metadata write to the coordinator.
// recorded is the checkpoint's metadata when CheckpointSpec.Completed
// recorded it: a resume may restore it even if it was aborted meanwhile,
// so its files stay, and a restart of this run restores it too (restoring
// an older one would discard what its sinks staged for it, which the
// recorded checkpoint commits when a later run restores it).
//
// unsure says the record was tried and failed: the store may hold it
// anyway, so the checkpoint's files stay whatever becomes of it here.
func (jm *JobManager) finalized(j *job, id int64, err error, recorded *storage.Metadata, unsure bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	cp := j.cp
	delete(cp.writing, id)
	if cp.restartWaits && len(cp.writing) == 0 {
		cp.restartWaits = false
		attempt := j.attempt
		defer func() { go jm.restart(j, attempt) }()
	}
	if cp.discard[id] {
		delete(cp.discard, id)
		if recorded != nil {
			// Complete in storage and recorded as the job's latest (high
			// availability's store): whatever restores next restores it,
			// and its sinks commit what it holds then. Never announced
			// here; retention does not know it (its folder stays until
			// the lineage's clean-up).
			if cp.latest == nil || cp.latest.CheckpointID < id {
				cp.latest = recorded
			}
			jm.logger.Info("checkpoint aborted after it was recorded as the job's latest: restores start from it",
				"job", j.spec.ID, "checkpoint", id)
			return
		}
		if !unsure {
			jm.deleteLocked(j, storage.Metadata{JobID: j.spec.ID, CheckpointID: id}, nil)
		}
		return
	}
	if unsure {
		cp.unsure[id] = true // the coordinator aborts it next (below)
	}
	if err != nil {
		jm.logger.Warn("writing checkpoint metadata failed", "job", j.spec.ID, "checkpoint", id, "err", err)
	}
	jm.applyLocked(j, cp.coord.Finalized(j.spec.Clock.NowMillis(), id, err))
}

// triggerLocked snapshots the operator coordinators and asks the sources to
// take the checkpoint.
func (jm *JobManager) triggerLocked(j *job, t coordinator.Trigger) {
	p := &pendingCheckpoint{trigger: t, coordState: map[string][]byte{}, acks: map[int]protocol.AcknowledgeCheckpoint{}}
	j.cp.pending[t.ID] = p
	j.cp.triggered = max(j.cp.triggered, t.ID)
	if r := j.savepoint; r != nil && r.opts.Stop && r.ckpt != 0 && r.ckpt != t.ID && len(t.Sources) > 0 {
		// The job is stopping with a savepoint: no checkpoint after it may
		// commit what operators emit past its barrier (processing-time
		// timers), which a run resumed from the savepoint emits again.
		// Declined without counting, as Flink stops its periodic scheduler.
		go jm.DeclineCheckpoint(protocol.DeclineCheckpoint{Exec: j.execs[t.Sources[0]], ID: t.ID,
			Reason: fmt.Sprintf("the job is stopping with savepoint %d", r.ckpt)})
		return
	}
	for id, oc := range j.coords {
		st, err := oc.c.Snapshot(t.ID)
		if err != nil {
			out := j.cp.coord.Decline(j.spec.Clock.NowMillis(), t.ID, t.Sources[0],
				fmt.Sprintf("snapshotting the coordinator of operator %s: %v", id, err), true)
			jm.applyLocked(j, out)
			return
		}
		// A marker byte keeps empty state apart from none (a coordinator
		// that was never snapshotted): restoring empty state is not a
		// fresh start.
		p.coordState[id] = append([]byte{coordStateV1}, st...)
	}
	opts := protocol.CheckpointOptions{Kind: protocol.CheckpointKind(t.Kind), Unaligned: t.Unaligned,
		AlignedTimeout: t.AlignedTimeout, AtLeastOnce: t.AtLeastOnce}
	if r := j.savepointTriggeredLocked(t); r != nil {
		opts.Native, opts.Stop, opts.Drain = r.opts.Native, r.opts.Stop, r.opts.Drain
	}
	if opts.Kind == protocol.Periodic && len(j.cp.sourcesEnded) == len(j.cp.sources) {
		// Every source ended: whatever checkpoint comes now is final for the
		// tasks (they end once it completes).
		opts.Kind = protocol.Final
	}
	for _, s := range t.Sources {
		i := int(s)
		if j.tmOf[i] == nil || !j.deployed[i] {
			// Not submitted yet (right after a (re)start the first trigger
			// can beat deployment): decline it as a TaskManager declines a
			// trigger for a task it does not run, without counting it as a
			// failure, so the checkpoint does not wait for an
			// acknowledgement that cannot come until it expires. Async, as
			// the TaskManager's, so the decline never re-enters this call.
			go jm.DeclineCheckpoint(protocol.DeclineCheckpoint{Exec: j.execs[i], ID: t.ID, Reason: "the task is not deployed yet"})
			continue
		}
		j.tmOf[i].send(protocol.TriggerCheckpoint{Exec: j.execs[i], ID: t.ID, Timestamp: t.Timestamp, Options: opts})
	}
}

// notifyLocked tells every deployed execution that a checkpoint completed
// or was aborted.
func (jm *JobManager) notifyLocked(j *job, id int64, complete, final bool) {
	for i, e := range j.execs {
		if j.deployed != nil && j.deployed[i] && !j.state.tasks[i].Terminal() {
			j.tmOf[i].send(protocol.NotifyCheckpoint{Exec: e, ID: id, Complete: complete, Final: final})
		}
	}
}

// terminateLocked tells every running execution that stop-with-savepoint id
// completed: commit it and end.
func (jm *JobManager) terminateLocked(j *job, id int64) {
	for i, e := range j.execs {
		if j.deployed != nil && j.deployed[i] && !j.state.tasks[i].Terminal() {
			j.tmOf[i].send(protocol.NotifyCheckpoint{Exec: e, ID: id, Complete: true, Terminate: true})
		}
	}
}

// deleteLocked deletes a checkpoint's files (and the shared ones no
// retained checkpoint needs) in the background.
func (jm *JobManager) deleteLocked(j *job, m storage.Metadata, shared []string) {
	store, log := j.cp.store, jm.logger
	j.io.Add(1)
	go func() {
		defer j.io.Done()
		if err := storage.Discard(context.Background(), store, m, shared); err != nil {
			log.Warn("deleting a checkpoint failed", "job", m.JobID, "checkpoint", m.CheckpointID, "err", err)
		}
	}()
}

func sharedKeys(p *pendingCheckpoint) []string {
	var keys []string
	for _, a := range p.acks {
		for _, o := range a.Operators {
			keys = append(keys, o.Shared...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// metadataLocked builds a complete checkpoint's metadata from the tasks'
// acknowledgements and the coordinators' state.
func (jm *JobManager) metadataLocked(j *job, id int64, p *pendingCheckpoint, now int64) *storage.Metadata {
	g := j.spec.Graph
	id0 := identityOf(j.spec)
	m := &id0
	m.CheckpointID, m.TriggerMillis, m.CompleteMillis = id, p.trigger.Timestamp, now
	m.Fingerprint, m.KeyHash = g.Fingerprint, j.keyHash
	byOp := map[string]*storage.OperatorState{}
	for _, v := range g.Vertices {
		for _, n := range v.Nodes {
			opID := g.OperatorIDs[n.ID]
			os := &storage.OperatorState{OperatorID: opID, UID: n.UID, Name: n.Name, Parallelism: v.Parallelism,
				MaxParallelism: v.MaxParallelism, Coordinator: p.coordState[opID]}
			byOp[opID] = os
		}
	}
	for i, a := range p.acks {
		for _, o := range a.Operators {
			if os := byOp[o.OperatorID]; os != nil {
				st := o.State
				st.Subtask = j.execs[i].Subtask
				os.Subtasks = append(os.Subtasks, st)
			}
		}
	}
	for _, os := range byOp {
		sort.Slice(os.Subtasks, func(a, b int) bool { return os.Subtasks[a].Subtask < os.Subtasks[b].Subtask })
		m.Operators = append(m.Operators, *os)
	}
	sort.Slice(m.Operators, func(a, b int) bool { return m.Operators[a].OperatorID < m.Operators[b].OperatorID })
	return m
}

// AcknowledgeCheckpoint implements protocol.JobManagerGateway.
func (jm *JobManager) AcknowledgeCheckpoint(a protocol.AcknowledgeCheckpoint) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, i, ok := jm.execLocked(a.Exec)
	if !ok || j.cp == nil || j.cp.stopped {
		return
	}
	if p := j.cp.pending[a.ID]; p != nil {
		p.acks[i] = a
		j.cp.recordAck(a.ID, i, a.Metrics)
	}
	jm.applyLocked(j, j.cp.coord.Ack(j.spec.Clock.NowMillis(), a.ID, coordinator.TaskID(i)))
}

// DeclineCheckpoint implements protocol.JobManagerGateway.
func (jm *JobManager) DeclineCheckpoint(d protocol.DeclineCheckpoint) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, i, ok := jm.execLocked(d.Exec)
	if !ok || j.cp == nil || j.cp.stopped {
		return
	}
	jm.applyLocked(j, j.cp.coord.Decline(j.spec.Clock.NowMillis(), d.ID, coordinator.TaskID(i), d.Reason, d.Counts))
	jm.maybeFinalCheckpointLocked(j)
}

// SourceEnded implements protocol.JobManagerGateway: once every source has
// read its input, the final checkpoint is triggered at once.
func (jm *JobManager) SourceEnded(s protocol.SourceEnded) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, i, ok := jm.execLocked(s.Exec)
	if !ok || j.cp == nil || j.cp.stopped {
		return
	}
	j.cp.sourcesEnded[i] = true
	jm.maybeFinalCheckpointLocked(j)
}

// maybeFinalCheckpointLocked triggers a final checkpoint when every source
// ended and none is in flight (the first one may have been aborted).
func (jm *JobManager) maybeFinalCheckpointLocked(j *job) {
	cp := j.cp
	if j.spec.Checkpoints.SavepointsOnly {
		return // its tasks end without one
	}
	if j.state.status != protocol.JobRunning || cp.finalRequested || len(cp.sourcesEnded) < len(cp.sources) {
		return
	}
	cp.finalRequested = true
	jm.applyLocked(j, cp.coord.TriggerNow(j.spec.Clock.NowMillis(), coordinator.Final))
}

func msDuration(ms int64) time.Duration { return time.Duration(max(ms, 0)) * time.Millisecond }

// CheckpointStats is what the JobManager knows of a job's checkpoints.
type CheckpointStats struct {
	Settings   coordinator.Settings
	StoreURL   string
	Counts     coordinator.Counts
	History    []coordinator.HistoryEntry // newest first
	Pending    []coordinator.PendingInfo
	Executions []ExecutionID // by task index, for Acks
	// Acks holds, per recent checkpoint, each execution's report by task index.
	Acks map[int64]map[int]protocol.CheckpointMetrics
	// RestoredFrom is the checkpoint the current attempt restored (0:
	// none), at RestoredAt (epoch ms), from RestoredPath.
	RestoredFrom int64
	RestoredAt   int64
	RestoredPath string
	Graph        *graph.JobGraph
	StateBackend string
}

// Checkpoints returns a job's checkpoint statistics; false if the job is
// unknown or takes no checkpoints.
func (jm *JobManager) Checkpoints(id string) (CheckpointStats, bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, ok := jm.jobs[id]
	if !ok || j.cp == nil {
		return CheckpointStats{}, false
	}
	cp := j.cp
	st := CheckpointStats{Settings: cp.coord.Settings(), StoreURL: cp.store.URL(), Counts: cp.coord.Stats(),
		History: cp.coord.History(1 << 30), Pending: cp.coord.Pending(), Executions: append([]ExecutionID(nil), j.execs...),
		Acks: map[int64]map[int]protocol.CheckpointMetrics{}, RestoredFrom: cp.restoredFrom, RestoredAt: cp.restoredAt,
		Graph: j.spec.Graph, StateBackend: j.spec.StateBackend}
	if cp.restoredFrom > 0 && j.restore != nil && j.restoreStore != nil {
		st.RestoredPath = j.restoreStore.URL() + "/" + storage.CheckpointPrefix(j.restore.JobID, j.restore.CheckpointID)
	}
	for id, a := range cp.acks {
		st.Acks[id] = maps.Clone(a)
	}
	return st, true
}

// sweepShared deletes, after the job ended, its incomplete checkpoints
// (chk-<n> without metadata: none can complete any more) and the shared
// files of its incremental checkpoints that no complete checkpoint in the
// storage references: those a task uploaded for a checkpoint that was then
// aborted (or never completed because the job ended) and that no later
// checkpoint reused. While the job runs such files are swept in rounds
// (hygiene.go). What is referenced is read from the checkpoints' metadata
// in the storage, not from the registry, so a checkpoint whose metadata
// was written is never broken. Failures only leave files behind, so they
// are logged.
func (jm *JobManager) sweepShared(j *job) {
	jm.mu.Lock()
	var store *storage.Store
	if j.cp != nil {
		store = j.cp.store
	}
	jm.mu.Unlock()
	if store == nil {
		return
	}
	ctx, job := context.Background(), j.spec.ID
	fail := func(err error) {
		jm.logger.Warn("sweeping unreferenced shared checkpoint files failed", "job", job, "err", err)
	}
	ids, err := storage.CheckpointIDs(ctx, store, job)
	if err != nil {
		fail(err)
		return
	}
	needed := map[string]bool{}
	for _, id := range ids {
		m, err := storage.ReadMetadata(ctx, store, job, id)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if err := storage.DiscardIncomplete(ctx, store, job, id); err != nil {
				fail(err)
			}
			continue
		case err != nil:
			fail(err) // unreadable: what it references is unknown
			return
		}
		for _, k := range m.SharedKeys() {
			needed[k] = true
		}
	}
	shared, err := storage.ListAll(ctx, store, storage.SharedPrefix(job))
	if err != nil {
		fail(err)
		return
	}
	var unneeded []string
	for _, k := range shared {
		if !needed[k] {
			unneeded = append(unneeded, k)
		}
	}
	if err := storage.DeleteObjects(ctx, store, unneeded); err != nil {
		fail(err)
	}
}
