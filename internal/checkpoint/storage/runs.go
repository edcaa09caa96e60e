package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// A lineage is the runs of one job that continue each other's state: a run
// resumed with --from latest (or from a checkpoint of an earlier run) is the
// next run of the same lineage, under a new job ID. The storage hygiene of
// the JobManager (subsuming earlier runs' checkpoints, deleting what no
// retained checkpoint needs) acts on the job IDs of its own lineage only.

// OfLineage reports whether m (a checkpoint's metadata, or a job directory's
// JobInfo) was written by a run of the lineage of me, the running job's
// identity (RunIdentity). It is the one place that decides: today two runs
// are one lineage when their job names are equal, as Latest picks the
// checkpoint to resume from.
func OfLineage(m, me *Metadata) bool { return m.JobName == me.JobName }

// RunIdentity returns the part of m that names the run that wrote it (job
// ID, job name): m without its checkpoint's fields. It is what a job
// directory's JobInfo holds.
func RunIdentity(m Metadata) Metadata {
	m.CheckpointID, m.TriggerMillis, m.CompleteMillis, m.Savepoint = 0, 0, 0, false
	m.Fingerprint, m.Operators, m.KeyHash = "", nil, 0
	return m
}

// JobInfoName is the object in a job's directory that names the run, so that
// a later run of its lineage recognizes the directory even when no
// checkpoint in it completed (a run killed before its first): written by the
// JobManager before any checkpoint, "<job-id>/_job".
const JobInfoName = "_job"

// JobInfoKey returns the key of jobID's JobInfo: "<job-id>/_job".
func JobInfoKey(jobID string) string { return jobID + "/" + JobInfoName }

// Encoding of a JobInfo (big-endian), framed like metadata:
//
//	magic "WEIRJOBI" | version u16 (1) | length u32 | JSON of RunIdentity(m) | CRC32C u32 of everything before
//
// The JSON is that of Metadata (its field names, unknown ones refused), with
// only the fields RunIdentity keeps.
const (
	jobInfoMagic   = "WEIRJOBI"
	jobInfoVersion = 1
)

// WriteJobInfo writes the JobInfo of the run m identifies (RunIdentity(m)).
func WriteJobInfo(ctx context.Context, s *Store, m Metadata) error {
	id := RunIdentity(m)
	if err := checkComponent(id.JobID); err != nil {
		return fmt.Errorf("storage: job info: job ID %q: %w", id.JobID, err)
	}
	payload, err := json.Marshal(id)
	if err != nil {
		panic(fmt.Sprintf("storage: encoding job info: %v", err)) // only plain types: cannot fail
	}
	out := make([]byte, 0, len(jobInfoMagic)+6+len(payload)+4)
	out = append(out, jobInfoMagic...)
	out = binary.BigEndian.AppendUint16(out, jobInfoVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(payload)))
	out = append(out, payload...)
	out = binary.BigEndian.AppendUint32(out, Checksum(out))
	return s.Put(ctx, JobInfoKey(id.JobID), out)
}

// ReadJobInfo reads jobID's JobInfo. A missing one gives an error wrapping
// ErrNotFound; a damaged one, of another version, or naming another job ID,
// a *CorruptError.
func ReadJobInfo(ctx context.Context, s *Store, jobID string) (*Metadata, error) {
	key := JobInfoKey(jobID)
	data, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	bad := func(part, format string, args ...any) (*Metadata, error) {
		return nil, &CorruptError{Key: key, Part: part, Reason: fmt.Sprintf(format, args...)}
	}
	head := len(jobInfoMagic) + 6
	if len(data) < head+4 || string(data[:len(jobInfoMagic)]) != jobInfoMagic {
		return bad("magic", "not a job info object (no %q at its start, or truncated)", jobInfoMagic)
	}
	body := data[:len(data)-4]
	if want, got := binary.BigEndian.Uint32(data[len(body):]), Checksum(body); want != got {
		return bad("checksum", "CRC32C %08x, stored %08x", got, want)
	}
	if v := binary.BigEndian.Uint16(data[len(jobInfoMagic):]); v != jobInfoVersion {
		return bad("version", "version %d, this build reads %d", v, jobInfoVersion)
	}
	if n := binary.BigEndian.Uint32(data[len(jobInfoMagic)+2:]); int64(n) != int64(len(body)-head) {
		return bad("length", "header says %d payload bytes, the object has %d", n, len(body)-head)
	}
	var m Metadata
	dec := json.NewDecoder(bytes.NewReader(body[head:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return bad("JSON", "%v", err)
	}
	if m.JobID != jobID {
		return bad("content", "names job %q (moved or copied?)", m.JobID)
	}
	return &m, nil
}

// Run is what the storage holds of one job ID (one run) of a lineage.
type Run struct {
	JobID string
	// Complete are its complete checkpoints, by ascending id.
	Complete []Metadata
	// Incomplete are its chk-<n> directories without metadata: checkpoints
	// that never completed (or are being written or deleted, if the run is
	// alive). Those whose metadata is present but unreadable (corrupt, or
	// of a version this build does not read) are in neither list: they
	// are never deleted.
	Incomplete []int64
	// Unreadable counts the checkpoints whose metadata could not be read:
	// what they reference is unknown, so nothing of the run but its
	// incomplete checkpoints may be deleted.
	Unreadable int
	// Objects are every key under the job's directory (files being written,
	// or left by a crash, included), sorted.
	Objects []string
}

// ScanLineage returns the runs of the lineage of me in s, other than
// me.JobID's, by job ID. A job directory belongs to the lineage when its
// JobInfo says so, or, without a readable JobInfo (written by an older
// build), when its newest complete checkpoint does (OfLineage). Directories
// that name no job (only incomplete or unreadable checkpoints and no
// JobInfo) and savepoint folders are left out: nothing says whose they are.
// log (may be nil) gets a Debug line for each directory left out.
func ScanLineage(ctx context.Context, s *Store, me *Metadata, log *slog.Logger) ([]Run, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	jobs, err := s.listDirs(ctx, "")
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, jobID := range jobs {
		if jobID == me.JobID || jobID == LeasePrefix || checkComponent(jobID) != nil || IsSavepointDir(jobID) {
			continue
		}
		r, ident, err := scanRun(ctx, s, jobID, me)
		if err != nil {
			return nil, err
		}
		switch {
		case ident == nil:
			log.Debug("checkpoint directory names no job: left alone", "store", s.URL(), "job_id", jobID)
		case !OfLineage(ident, me):
			log.Debug("checkpoint directory of another job", "store", s.URL(), "job_id", jobID, "job_name", ident.JobName)
		default:
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// scanRun reads what jobID's directory holds, and who wrote it (nil:
// unknown). A directory whose JobInfo names another lineage than me's is
// not read further.
func scanRun(ctx context.Context, s *Store, jobID string, me *Metadata) (Run, *Metadata, error) {
	r := Run{JobID: jobID}
	ident, err := ReadJobInfo(ctx, s, jobID)
	var ce *CorruptError
	switch {
	case err == nil:
		if !OfLineage(ident, me) {
			return r, ident, nil
		}
	case errors.Is(err, ErrNotFound) || errors.As(err, &ce):
		ident = nil
	default:
		return r, nil, err
	}
	ids, err := checkpointIDs(ctx, s, jobID)
	if err != nil {
		return r, nil, err
	}
	for _, id := range ids {
		m, err := ReadMetadata(ctx, s, jobID, id)
		var ce *CorruptError
		switch {
		case err == nil:
			r.Complete = append(r.Complete, *m)
		case errors.Is(err, ErrNotFound):
			r.Incomplete = append(r.Incomplete, id)
		case errors.As(err, &ce):
			r.Unreadable++ // what it references is unknown
		default:
			return r, nil, err
		}
	}
	if r.Objects, err = s.list(ctx, jobID+"/", true); err != nil {
		return r, nil, err
	}
	if n := len(r.Complete); ident == nil && n > 0 {
		ident = &r.Complete[n-1]
	}
	return r, ident, nil
}

// Newer orders checkpoints as Latest does: by CompleteMillis, then
// CheckpointID. It returns a negative number when a is older than b.
func Newer(a, b *Metadata) int {
	return cmp.Or(cmp.Compare(a.CompleteMillis, b.CompleteMillis), cmp.Compare(a.CheckpointID, b.CheckpointID))
}

// SharedPrefix returns the prefix of jobID's shared files: "<job-id>/shared/".
func SharedPrefix(jobID string) string { return jobID + "/" + SharedDir + "/" }

// ListAll returns every key under prefix, sorted, with the temporary files
// of writes in progress (or left by a crash) in a file store: what cleanup
// may have to delete.
func ListAll(ctx context.Context, s *Store, prefix string) ([]string, error) {
	return s.list(ctx, prefix, true)
}

// DeleteObjects deletes keys (as listed by ListAll: temporary files
// included). It goes on past failures and returns them joined; a missing
// key is not a failure.
func DeleteObjects(ctx context.Context, s *Store, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := s.remove(ctx, k, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteRun deletes jobID's directory except the keys keep reports: the
// checkpoints' metadata first (so that no checkpoint is ever left complete
// with objects missing), then every other object, the JobInfo last (so that
// a deletion cut short still names the run for the next attempt), then the
// empty directories. objects are the directory's keys (Run.Objects).
func DeleteRun(ctx context.Context, s *Store, jobID string, objects []string, keep func(key string) bool) error {
	var metas, rest []string
	info := JobInfoKey(jobID)
	for _, k := range objects {
		switch {
		case keep != nil && keep(k):
		case strings.HasSuffix(k, "/"+MetadataName):
			metas = append(metas, k)
		case k != info:
			rest = append(rest, k)
		}
	}
	if err := DeleteObjects(ctx, s, metas); err != nil {
		return err
	}
	if err := DeleteObjects(ctx, s, rest); err != nil {
		return err
	}
	if keep == nil || !keep(info) {
		if err := s.Delete(ctx, info); err != nil {
			return err
		}
	}
	s.removeEmptyDirs(jobID + "/")
	return nil
}

// DiscardIncomplete deletes checkpoint id of jobID, which has no metadata
// (it never completed), with whatever its tasks wrote under chk-<id>/.
func DiscardIncomplete(ctx context.Context, s *Store, jobID string, id int64) error {
	return Discard(ctx, s, Metadata{JobID: jobID, CheckpointID: id}, nil)
}

// DiscardSavepointDir deletes what a failed savepoint wrote into its folder
// (s's root) and the folder itself. A folder holding a complete savepoint
// (a readable MetadataName) is kept: ErrCompleteSavepoint.
func DiscardSavepointDir(ctx context.Context, s *Store) error {
	if _, err := ReadSavepointMetadata(ctx, s); err == nil {
		return fmt.Errorf("storage: %s: %w", s.URL(), ErrCompleteSavepoint)
	}
	keys, err := s.list(ctx, "", true)
	if err != nil {
		return err
	}
	// The metadata (if a damaged one is there) first: never a complete-looking folder with objects missing.
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmp.Compare(btoi(b == MetadataName), btoi(a == MetadataName))
	})
	if err := DeleteObjects(ctx, s, keys); err != nil {
		return err
	}
	s.removeRoot()
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ErrCompleteSavepoint is wrapped by DiscardSavepointDir's error when the
// folder holds a complete savepoint.
var ErrCompleteSavepoint = errors.New("the folder holds a complete savepoint: kept")
