package storage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// JobInfo round-trips the run's identity and nothing else; damage, another
// version, or another job's info are CorruptErrors; a missing one is
// ErrNotFound.
func TestJobInfo(t *testing.T) {
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, sc.root(t))
			if _, err := storage.ReadJobInfo(ctx, s, "job1"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("missing job info: %v", err)
			}
			m := sampleMetadata("job1", 3)
			if err := storage.WriteJobInfo(ctx, s, m); err != nil {
				t.Fatal(err)
			}
			got, err := storage.ReadJobInfo(ctx, s, "job1")
			if err != nil {
				t.Fatal(err)
			}
			if got.JobID != "job1" || got.JobName != "wordcount" || got.CheckpointID != 0 || got.Operators != nil || got.Fingerprint != "" {
				t.Fatalf("job info %+v, want the identity of %s/%s only", got, m.JobID, m.JobName)
			}
			data, _ := s.Get(ctx, storage.JobInfoKey("job1"))
			for name, bad := range map[string][]byte{
				"flipped":   flip(data, len(data)/2),
				"truncated": data[:len(data)-3],
				"metadata":  storage.EncodeMetadata(m),
			} {
				mustPut(t, s, storage.JobInfoKey("job2"), bad)
				var ce *storage.CorruptError
				if _, err := storage.ReadJobInfo(ctx, s, "job2"); !errors.As(err, &ce) {
					t.Errorf("%s job info: %v, want a CorruptError", name, err)
				}
			}
			mustPut(t, s, storage.JobInfoKey("job2"), data) // names job1
			var ce *storage.CorruptError
			if _, err := storage.ReadJobInfo(ctx, s, "job2"); !errors.As(err, &ce) || !strings.Contains(err.Error(), "job1") {
				t.Errorf("moved job info: %v, want a CorruptError naming job1", err)
			}
		})
	}
}

func flip(data []byte, i int) []byte {
	d := slices.Clone(data)
	d[i] ^= 0x10
	return d
}

// ScanLineage finds the job directories of the lineage by their JobInfo, or
// without one by their newest complete checkpoint, and leaves out the
// caller's own, other job names, directories that name no job, and
// savepoint folders. It lists complete, incomplete and unreadable
// checkpoints apart, and every object.
func TestScanLineage(t *testing.T) {
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, sc.root(t))
			named := func(jobID, name string, id int64) storage.Metadata {
				return withTimes(sampleMetadata(jobID, id), name, 1000*id)
			}
			// a: JobInfo, two complete, one incomplete, one corrupt.
			storage.WriteJobInfo(ctx, s, named("a", "wc", 1))
			writeCheckpoint(t, s, named("a", "wc", 1), true)
			writeCheckpoint(t, s, named("a", "wc", 2), true)
			writeCheckpoint(t, s, named("a", "wc", 3), false)
			corruptMetadata(t, s, named("a", "wc", 4))
			// b: only a JobInfo and an incomplete checkpoint (killed early).
			storage.WriteJobInfo(ctx, s, named("b", "wc", 1))
			writeCheckpoint(t, s, named("b", "wc", 1), false)
			// c: no JobInfo (an older build), complete of our name.
			writeCheckpoint(t, s, named("c", "wc", 5), true)
			// d: another job name; e: names nothing; me: the caller.
			storage.WriteJobInfo(ctx, s, named("d", "other", 1))
			writeCheckpoint(t, s, named("d", "other", 1), false)
			writeCheckpoint(t, s, named("e", "wc", 1), false)
			storage.WriteJobInfo(ctx, s, named("me", "wc", 1))
			writeCheckpoint(t, s, named("me", "wc", 1), false)
			// A savepoint folder at the root, of our name.
			mustPut(t, s, "savepoint-abcdef-0123/_metadata", storage.EncodeMetadata(named("sp", "wc", 9)))
			mustPut(t, s, "savepoint-abcdef-0123/chk-1/_metadata", storage.EncodeMetadata(named("sp", "wc", 9)))

			me := storage.RunIdentity(named("me", "wc", 1))
			runs, err := storage.ScanLineage(ctx, s, &me, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range runs {
				ids = append(ids, r.JobID)
			}
			if !slices.Equal(ids, []string{"a", "b", "c"}) {
				t.Fatalf("runs %v, want [a b c]", ids)
			}
			a := runs[0]
			var complete []int64
			for _, m := range a.Complete {
				complete = append(complete, m.CheckpointID)
			}
			if !slices.Equal(complete, []int64{1, 2}) || !slices.Equal(a.Incomplete, []int64{3}) || a.Unreadable != 1 {
				t.Errorf("run a: complete %v incomplete %v unreadable %d, want [1 2] [3] 1", complete, a.Incomplete, a.Unreadable)
			}
			if !slices.Contains(a.Objects, storage.JobInfoKey("a")) || !slices.Contains(a.Objects, storage.MetadataKey("a", 4)) ||
				!slices.Contains(a.Objects, storage.SharedKey("a", "b-1-000004.sst")) {
				t.Errorf("run a's objects %v lack its JobInfo, corrupt metadata or shared file", a.Objects)
			}
			if len(runs[1].Complete) != 0 || !slices.Equal(runs[1].Incomplete, []int64{1}) {
				t.Errorf("run b: %+v", runs[1])
			}
		})
	}
}

// OfLineage decides by the job name today.
func TestOfLineage(t *testing.T) {
	me := storage.Metadata{JobID: "x", JobName: "wc"}
	if !storage.OfLineage(&storage.Metadata{JobID: "y", JobName: "wc"}, &me) || storage.OfLineage(&storage.Metadata{JobID: "y", JobName: "other"}, &me) {
		t.Fatal("OfLineage does not compare job names")
	}
}

// DeleteRun deletes a job directory but what keep keeps, and an
// interrupted one leaves no checkpoint complete with objects missing and
// still names the run.
func TestDeleteRun(t *testing.T) {
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, sc.root(t))
			m := sampleMetadata("a", 1)
			storage.WriteJobInfo(ctx, s, m)
			writeCheckpoint(t, s, m, true)
			writeCheckpoint(t, s, sampleMetadata("a", 2), false)
			writeCheckpoint(t, s, sampleMetadata("other", 1), true)
			objects, err := storage.ListAll(ctx, s, "a/")
			if err != nil {
				t.Fatal(err)
			}
			// Every delete fails after the first: only the metadata went.
			n := 0
			faulty := storage.WithFaults(s, func(op, key string) (time.Duration, error) {
				if op == storage.OpDelete {
					n++
					if n > 1 {
						return 0, storage.ErrInjected
					}
				}
				return 0, nil
			})
			if err := storage.DeleteRun(ctx, faulty, "a", objects, nil); err == nil {
				t.Fatal("DeleteRun with failing deletes reported no error")
			}
			if ids, _ := storage.Completed(ctx, s, "a"); len(ids) != 0 {
				t.Fatalf("after an interrupted DeleteRun checkpoints %v are still complete", ids)
			}
			if _, err := storage.ReadJobInfo(ctx, s, "a"); err != nil {
				t.Fatalf("an interrupted DeleteRun removed the JobInfo: %v", err)
			}
			keep := storage.SharedKey("a", "b-1-000007.sst")
			if err := storage.DeleteRun(ctx, s, "a", objects, func(k string) bool { return k == keep }); err != nil {
				t.Fatal(err)
			}
			left, _ := storage.ListAll(ctx, s, "a/")
			if !slices.Equal(left, []string{keep}) {
				t.Fatalf("left %v, want [%s]", left, keep)
			}
			if ids, _ := storage.Completed(ctx, s, "other"); len(ids) != 1 {
				t.Fatalf("another job's checkpoints: %v", ids)
			}
		})
	}
}

// A failed savepoint's folder goes whole (partial objects, a damaged
// metadata, the directory itself); a complete savepoint is kept.
func TestDiscardSavepointDir(t *testing.T) {
	ctx := context.Background()
	target := t.TempDir()
	s, err := storage.OpenSavepointDir(ctx, target, "savepoint-abc-1")
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "shared/x.sst", []byte("x"))
	mustPut(t, s, "op-1-keyed", []byte("y"))
	mustPut(t, s, storage.MetadataName, []byte("damaged"))
	if err := storage.DiscardSavepointDir(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("the failed savepoint left %v", entries)
	}
	empty, _ := storage.OpenSavepointDir(ctx, target, "savepoint-abc-2")
	if err := storage.DiscardSavepointDir(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(target, "savepoint-abc-2")); !os.IsNotExist(err) {
		t.Fatalf("an empty savepoint folder is left: %v", err)
	}
	src := open(t, "file://"+t.TempDir())
	m := writeCheckpoint(t, src, sampleMetadata("j", 1), true)
	done, _ := storage.OpenSavepointDir(ctx, target, "savepoint-abc-3")
	if _, err := storage.WriteSavepoint(ctx, src, m, done); err != nil {
		t.Fatal(err)
	}
	if err := storage.DiscardSavepointDir(ctx, done); !errors.Is(err, storage.ErrCompleteSavepoint) {
		t.Fatalf("discarding a complete savepoint: %v", err)
	}
	if _, err := storage.ReadSavepointMetadata(ctx, done); err != nil {
		t.Fatalf("the complete savepoint is damaged: %v", err)
	}
}
