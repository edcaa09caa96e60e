package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
)

// A savepoint is written into a folder of its own, anywhere; the checkpoint
// storage of the job that took it keeps a pointer to it, so that resuming
// "the latest snapshot" of a job sees a savepoint that is newer than its
// checkpoints (a stop's savepoint, whose commits the sinks made) and does
// not replay from an older checkpoint into output that already holds more.
// Pointers live at <job-id>/savepoints/<checkpoint id, 20 digits>.

// SavepointPointer is what a job's checkpoint storage records of a savepoint
// it took.
type SavepointPointer struct {
	URL            string `json:"url"` // the savepoint folder
	JobName        string `json:"jobName"`
	Lineage        string `json:"lineage,omitempty"`
	CheckpointID   int64  `json:"checkpointId"`
	CompleteMillis int64  `json:"completeMillis"`
}

func savepointPointerKey(jobID string, id int64) string {
	return fmt.Sprintf("%s/savepoints/%020d", jobID, id)
}

// WriteSavepointPointer records, in the checkpoint storage s of the job that
// took it, the savepoint m written to the folder at url.
func WriteSavepointPointer(ctx context.Context, s *Store, m *Metadata, url string) error {
	p := SavepointPointer{URL: url, JobName: m.JobName, Lineage: m.Lineage, CheckpointID: m.CheckpointID, CompleteMillis: m.CompleteMillis}
	data, _ := json.Marshal(p)
	return s.Put(ctx, savepointPointerKey(m.JobID, m.CheckpointID), data)
}

// IsSavepointPointer reports whether key is a savepoint pointer.
func IsSavepointPointer(key string) bool {
	jobID, rest, ok := strings.Cut(key, "/savepoints/")
	if !ok || checkComponent(jobID) != nil || strings.Contains(jobID, "/") {
		return false
	}
	_, err := strconv.ParseInt(rest, 10, 64)
	return err == nil
}

// savepointPointers returns jobID's savepoint pointers, newest id first.
func savepointPointers(ctx context.Context, s *Store, jobID string) ([]SavepointPointer, error) {
	prefix := jobID + "/savepoints/"
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []SavepointPointer
	for _, k := range slices.Backward(keys) {
		if _, err := strconv.ParseInt(strings.TrimPrefix(k, prefix), 10, 64); err != nil {
			continue
		}
		data, err := s.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var p SavepointPointer
		if json.Unmarshal(data, &p) == nil && p.URL != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// Snapshot is a complete checkpoint or savepoint and the store its keys are
// relative to.
type Snapshot struct {
	Metadata *Metadata
	Store    *Store // the checkpoint storage, or an opened savepoint folder (the caller closes it)
}

// LatestSnapshot returns the newest complete snapshot of jobName among the
// checkpoints in s and the savepoints its runs took (Latest, plus the
// savepoint pointers): newest by completion time, then id. A pointer whose
// folder is gone, moved or damaged is skipped with a Warn on log. It returns
// a zero Snapshot when there is none.
func LatestSnapshot(ctx context.Context, s *Store, jobName string, log *slog.Logger) (Snapshot, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	best, err := Latest(ctx, s, jobName, log)
	if err != nil {
		return Snapshot{}, err
	}
	out := Snapshot{Metadata: best, Store: s}
	jobs, err := s.listDirs(ctx, "")
	if err != nil {
		return Snapshot{}, err
	}
	for _, jobID := range jobs {
		if checkComponent(jobID) != nil || jobID == LeasePrefix {
			continue
		}
		ptrs, err := savepointPointers(ctx, s, jobID)
		if err != nil {
			return Snapshot{}, err
		}
		for _, p := range ptrs {
			if p.JobName != jobName {
				break
			}
			if out.Metadata != nil && Newer(&Metadata{CompleteMillis: p.CompleteMillis, CheckpointID: p.CheckpointID}, out.Metadata) <= 0 {
				break // this job's older pointers are older still
			}
			sp, m, err := Resolve(ctx, p.URL)
			if err == nil && (m.JobID != jobID || m.CheckpointID != p.CheckpointID) {
				sp.Close()
				err = fmt.Errorf("it holds savepoint %d of job %s, not savepoint %d of job %s (overwritten?)", m.CheckpointID, m.JobID, p.CheckpointID, jobID)
			}
			if err != nil {
				if ctx.Err() != nil {
					return Snapshot{}, ctx.Err()
				}
				log.Warn("skipping a savepoint of the job: its folder is gone, moved or damaged (resume from it with --from PATH)",
					"savepoint", p.URL, "job_id", jobID, "checkpoint", p.CheckpointID, "err", err)
				continue
			}
			if out.Store != s {
				out.Store.Close()
			}
			out = Snapshot{Metadata: m, Store: sp}
			break
		}
	}
	return out, nil
}
