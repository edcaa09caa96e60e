package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The latest snapshot of a job is its newest checkpoint or savepoint: a
// stop's savepoint newer than the checkpoints before it wins; a savepoint
// older than a later checkpoint does not; a savepoint folder that is gone
// is passed over for the newest checkpoint; another job's savepoints count
// for nothing.
func TestLatestSnapshot(t *testing.T) {
	ctx := context.Background()
	root, sps := t.TempDir(), t.TempDir()
	s := openTestStore(t, root)
	const job, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	checkpoint := func(jobID, name string, id, done int64) Metadata {
		m := Metadata{JobID: jobID, JobName: name, CheckpointID: id, CompleteMillis: done, Lineage: "L"}
		if err := WriteMetadata(ctx, s, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	savepoint := func(m Metadata, folder string) string {
		dst, err := OpenSavepointDir(ctx, sps, folder)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		sm, err := WriteSavepoint(ctx, s, m, dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSavepointPointer(ctx, s, sm, dst.URL()); err != nil {
			t.Fatal(err)
		}
		return dst.URL()
	}
	latest := func() (int64, bool, string) {
		t.Helper()
		snap, err := LatestSnapshot(ctx, s, "kc", nil)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Metadata == nil {
			return 0, false, ""
		}
		if snap.Store != s {
			defer snap.Store.Close()
		}
		return snap.Metadata.CheckpointID, snap.Metadata.Savepoint, snap.Store.URL()
	}
	if id, _, _ := latest(); id != 0 {
		t.Fatalf("empty store: checkpoint %d", id)
	}
	checkpoint(job, "kc", 2, 100)
	checkpoint(job, "kc", 3, 200)
	// A savepoint taken between checkpoints 2 and 3 is older than 3.
	savepoint(Metadata{JobID: job, JobName: "kc", CheckpointID: 1, CompleteMillis: 50}, "savepoint-old")
	if id, sp, _ := latest(); id != 3 || sp {
		t.Fatalf("got %d (savepoint %t), want checkpoint 3", id, sp)
	}
	// The stop's savepoint, after checkpoint 3.
	url := savepoint(Metadata{JobID: job, JobName: "kc", CheckpointID: 4, CompleteMillis: 300}, "savepoint-stop")
	if id, sp, u := latest(); id != 4 || !sp || u != url {
		t.Fatalf("got %d (savepoint %t, %s), want savepoint 4 at %s", id, sp, u, url)
	}
	// Another job name's newer savepoint is not ours.
	savepoint(Metadata{JobID: other, JobName: "other", CheckpointID: 9, CompleteMillis: 900}, "savepoint-other")
	if id, sp, _ := latest(); id != 4 || !sp {
		t.Fatalf("got %d (savepoint %t), want savepoint 4", id, sp)
	}
	// The folder goes: back to the newest checkpoint (the sinks' commit
	// floor then refuses what would duplicate).
	if err := os.RemoveAll(filepath.Join(sps, "savepoint-stop")); err != nil {
		t.Fatal(err)
	}
	if id, sp, _ := latest(); id != 3 || sp {
		t.Fatalf("got %d (savepoint %t), want checkpoint 3", id, sp)
	}
}
