package jobmanager

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/snapshot"
)

// planRestore computes what each execution of the current attempt restores
// from j.restore: operators are matched by their stable ID; keyed state goes
// by key-group range (so the parallelism may differ), operator state is
// redistributed as its kind says, and channel state (unaligned checkpoints)
// needs the same parallelism. It returns nil for a fresh start. It sets the
// attempt's key hash version.
func (jm *JobManager) planRestore(j *job) (map[ExecutionID]*protocol.TaskRestore, error) {
	m := j.restore
	j.keyHash = keyHashFor(m)
	if m == nil {
		return nil, nil
	}
	g := j.spec.Graph
	byID := map[string]*storage.OperatorState{}
	for i := range m.Operators {
		byID[m.Operators[i].OperatorID] = &m.Operators[i]
	}
	known := map[string]bool{}
	plan := map[ExecutionID]*protocol.TaskRestore{}
	for vi, v := range g.Vertices {
		for _, n := range v.Nodes {
			opID := g.OperatorIDs[n.ID]
			known[opID] = true
			os := byID[opID]
			if os == nil || len(os.Subtasks) == 0 {
				continue
			}
			// Only keyed state is cut by key group; operator state and a
			// source's splits redistribute whatever the max parallelism.
			if os.MaxParallelism != v.MaxParallelism && os.HasKeyed() {
				return nil, fmt.Errorf("%s had max parallelism %d in checkpoint %d and has %d now; "+
					"max parallelism (the number of key groups) is fixed when a job first runs and cannot change across a restore: "+
					"set it back to %d (--max-parallelism of weir run, Config.MaxParallelism, or the operator's own)",
					describeOperator(os.UID, n.Name, opID), os.MaxParallelism, m.CheckpointID, v.MaxParallelism, os.MaxParallelism)
			}
			if err := checkKeyedFormat(os, j.spec.StateBackend, m.CheckpointID, describeOperator(os.UID, n.Name, opID)); err != nil {
				return nil, err
			}
			opStates, err := redistributeOperatorState(j.restoreStore, os, v.Parallelism)
			if err != nil {
				return nil, fmt.Errorf("operator %q: %w", n.Name, err)
			}
			for s := range v.Parallelism {
				or := protocol.OperatorRestore{OperatorID: opID, Operator: opStates[s]}
				rng := keygroup.RangeFor(s, v.Parallelism, v.MaxParallelism)
				for _, st := range os.Subtasks {
					for _, kh := range st.Keyed {
						if kh.KeyGroupStart <= rng.End && rng.Start <= kh.KeyGroupEnd {
							or.Keyed = append(or.Keyed, kh)
						}
					}
					if len(st.InputChannels)+len(st.OutputChannels) > 0 {
						if os.Parallelism != v.Parallelism {
							return nil, fmt.Errorf("operator %q: checkpoint %d is unaligned (it holds in-flight data) and was taken at parallelism %d; it cannot be restored at parallelism %d",
								n.Name, m.CheckpointID, os.Parallelism, v.Parallelism)
						}
						if st.Subtask == s {
							or.InputChannels, or.OutputChannels = st.InputChannels, st.OutputChannels
						}
					}
				}
				if or.Operator == nil && len(or.Keyed) == 0 && len(or.InputChannels)+len(or.OutputChannels) == 0 {
					continue
				}
				e := ExecutionID{Job: j.spec.ID, Vertex: vi, Subtask: s, Attempt: j.attempt}
				tr := plan[e]
				if tr == nil {
					tr = &protocol.TaskRestore{StorageURL: j.restoreStore.URL(), JobID: m.JobID, CheckpointID: m.CheckpointID}
					plan[e] = tr
				}
				tr.Operators = append(tr.Operators, or)
			}
		}
	}
	for _, os := range m.Operators {
		if known[os.OperatorID] || (len(os.Subtasks) == 0 && os.Coordinator == nil) {
			continue
		}
		what := describeOperator(os.UID, os.Name, os.OperatorID)
		if j.spec.AllowNonRestoredState {
			// The state is dropped for good: the next checkpoint of this
			// job will not have it. The log line is the only trace.
			jm.logger.Warn("skipping state of an operator this job does not have (allow non-restored state)",
				"job", j.spec.ID, "checkpoint", m.CheckpointID, "operator", what)
			continue
		}
		fix := "give the operator its old UID"
		if os.UID == "" {
			fix = fmt.Sprintf("restore the operator with the same name and inputs (it had no UID; its stable ID %s comes from them)", os.OperatorID)
		}
		return nil, fmt.Errorf("checkpoint %d has state of %s, which this job does not have; "+
			"%s, or pass --allow-non-restored-state (Config.AllowNonRestoredState) to start without that state",
			m.CheckpointID, what, fix)
	}
	return plan, nil
}

// freshKeyHash overrides the key hash version of a fresh start (0: none).
var freshKeyHash atomic.Uint32

// SetFreshKeyHash makes jobs that start without state use key hash version
// v (0: keygroup.CurrentHash). Tests use it to write checkpoints as a build
// of an older version did.
func SetFreshKeyHash(v keygroup.HashVersion) { freshKeyHash.Store(uint32(v)) }

// keyHashFor is the key hash version of an attempt that restores m (nil: a
// fresh start): the one m's key groups were computed with
// (storage.Metadata.KeyHashVersion), since every key must find its state
// where the old job put it; the current one when m holds no keyed state.
func keyHashFor(m *storage.Metadata) keygroup.HashVersion {
	if m != nil {
		if v := m.KeyHashVersion(); v != 0 {
			return v
		}
	}
	if v := keygroup.HashVersion(freshKeyHash.Load()); v != 0 {
		return v
	}
	return keygroup.CurrentHash
}

// describeOperator names an operator of a checkpoint for an error: by its
// UID when it had one (that is what a user matches on), else by its name
// and the stable ID that was derived from its name and inputs.
func describeOperator(uid, name, opID string) string {
	if uid != "" {
		return fmt.Sprintf("operator %q (uid %q)", name, uid)
	}
	return fmt.Sprintf("operator %q (no uid; stable ID %s)", name, opID)
}

// checkKeyedFormat refuses, before anything is deployed, keyed state in
// Pebble's native format for a job on another backend: only Pebble can read
// its own files, and a task that failed on it would restart into the same
// failure again and again. Canonical snapshots restore into either backend.
func checkKeyedFormat(os *storage.OperatorState, backend string, checkpointID int64, what string) error {
	if backend == "pebble" {
		return nil
	}
	if backend == "" {
		backend = "hashmap"
	}
	for _, st := range os.Subtasks {
		for _, kh := range st.Keyed {
			if kh.Kind == storage.KindNative {
				return fmt.Errorf("checkpoint %d holds the keyed state of %s in Pebble's native format (incremental checkpoints, or a native savepoint), "+
					"which only the pebble state backend restores; this job uses the %s backend, which reads the canonical format: "+
					"resume with --state-backend pebble, or take a canonical savepoint", checkpointID, what, backend)
			}
		}
	}
	return nil
}

// redistributeOperatorState returns each new subtask's operator state,
// encoded: as it was when the parallelism is the same, else redistributed
// (list state split evenly, union state to everyone, broadcast state copied).
func redistributeOperatorState(store *storage.Store, os *storage.OperatorState, parallelism int) ([][]byte, error) {
	out := make([][]byte, parallelism)
	old := make([][]byte, os.Parallelism)
	any := false
	for _, st := range os.Subtasks {
		b := st.Inline
		if st.Operator != nil {
			var err error
			if b, err = storage.ReadVerified(context.Background(), store, *st.Operator); err != nil {
				return nil, fmt.Errorf("reading its operator state: %w", err)
			}
		}
		if b != nil && st.Subtask < len(old) {
			old[st.Subtask], any = b, true
		}
	}
	if !any {
		return out, nil
	}
	if os.Parallelism == parallelism {
		return old, nil
	}
	snaps := make([]snapshot.OperatorSnapshot, len(old))
	for i, b := range old {
		if b == nil {
			continue
		}
		s, err := snapshot.DecodeOperator(b)
		if err != nil {
			return nil, err
		}
		snaps[i] = s
	}
	re, err := snapshot.RedistributeOperator(snaps, parallelism)
	if err != nil {
		return nil, err
	}
	for i, s := range re {
		if len(s.States) > 0 {
			out[i] = snapshot.EncodeOperator(s)
		}
	}
	return out, nil
}
