package jobmanager

import (
	"context"
	"fmt"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/snapshot"
)

// planRestore computes what each execution of the current attempt restores
// from j.restore: operators are matched by their stable ID; keyed state goes
// by key-group range (so the parallelism may differ), operator state is
// redistributed as its kind says, and channel state (unaligned checkpoints)
// needs the same parallelism. It returns nil for a fresh start.
func (jm *JobManager) planRestore(j *job) (map[ExecutionID]*protocol.TaskRestore, error) {
	m := j.restore
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
			if os.MaxParallelism != v.MaxParallelism {
				return nil, fmt.Errorf("operator %q had max parallelism %d in checkpoint %d and has %d now; the number of key groups cannot change",
					n.Name, os.MaxParallelism, m.CheckpointID, v.MaxParallelism)
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
		if !known[os.OperatorID] && (len(os.Subtasks) > 0 || os.Coordinator != nil) {
			uid := ""
			if os.UID != "" {
				uid = fmt.Sprintf(" (uid %q)", os.UID)
			}
			return nil, fmt.Errorf("checkpoint %d has state of operator %q%s, which this job does not have; "+
				"give the operator its old UID, or start without that state", m.CheckpointID, os.Name, uid)
		}
	}
	return plan, nil
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
