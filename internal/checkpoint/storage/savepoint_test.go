package storage_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// checkpointWithObjects writes a checkpoint's objects (canonical keyed
// state, native files two of which are shared, timers, operator state) into
// s and returns its metadata, not written.
func checkpointWithObjects(t *testing.T, s *storage.Store, jobID string, id int64) storage.Metadata {
	t.Helper()
	chk := storage.CheckpointPrefix(jobID, id)
	put := func(key, data string) storage.ObjectHandle {
		h, err := storage.PutObject(context.Background(), s, key, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	opState := put(chk+"op-a-0-operator", "operator state")
	timers := put(chk+"op-b-1-timers", "timers")
	return storage.Metadata{JobID: jobID, JobName: "j", CheckpointID: id, Fingerprint: "f",
		Operators: []storage.OperatorState{
			{OperatorID: "a", Name: "A", Parallelism: 1, MaxParallelism: 8, Coordinator: []byte{1, 2},
				Subtasks: []storage.SubtaskState{{Subtask: 0, Operator: &opState}}},
			{OperatorID: "b", Name: "B", Parallelism: 2, MaxParallelism: 8, Subtasks: []storage.SubtaskState{
				{Subtask: 0, Keyed: []storage.KeyedHandle{{Kind: storage.KindCanonical, KeyGroupStart: 0, KeyGroupEnd: 3, Object: put(chk+"op-b-0-keyed", "canonical")}}},
				{Subtask: 1, Keyed: []storage.KeyedHandle{{Kind: storage.KindNative, KeyGroupStart: 4, KeyGroupEnd: 7, Timers: &timers,
					Files: []storage.NativeFile{
						{Name: "000004.sst", Object: put(storage.SharedKey(jobID, "b-1-x-000004.sst"), "sst 4"), Shared: true},
						{Name: "MANIFEST-000001", Object: put(chk+"op-b-1-native-MANIFEST-000001", "manifest")},
					}}}},
			}},
		}}
}

// A savepoint copies exactly what the checkpoint names into its folder,
// with keys relative to it and nothing shared, _metadata last; it resolves
// from the folder alone. A damaged source object fails it and leaves
// nothing behind.
func TestWriteSavepoint(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		src := open(t, root)
		m := checkpointWithObjects(t, src, "job1", 7)
		mustPut(t, src, storage.SharedKey("job1", "unrelated.sst"), []byte("not named by the checkpoint"))
		dst, err := storage.OpenSavepointDir(ctx, root, storage.SavepointDirName("job1"))
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		sp, err := storage.WriteSavepoint(ctx, src, m, dst)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"_metadata", "op-a-0-operator", "op-b-0-keyed", "op-b-1-native-MANIFEST-000001", "op-b-1-timers", "shared/b-1-x-000004.sst"}
		if got := mustList(t, dst, ""); !slices.Equal(got, want) {
			t.Fatalf("savepoint folder holds %q, want %q", got, want)
		}
		st, rm, err := storage.Resolve(ctx, dst.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if !rm.Savepoint || rm.CheckpointID != 7 || string(rm.Operators[0].Coordinator) != "\x01\x02" {
			t.Fatalf("resolved %+v", rm)
		}
		if len(sp.SharedKeys()) != 0 || len(rm.SharedKeys()) != 0 {
			t.Fatalf("a savepoint shares %q", rm.SharedKeys())
		}
		kh := rm.Operators[1].Subtasks[1].Keyed[0]
		for _, h := range []storage.ObjectHandle{kh.Files[0].Object, kh.Files[1].Object, *kh.Timers, rm.Operators[1].Subtasks[0].Keyed[0].Object, *rm.Operators[0].Subtasks[0].Operator} {
			if _, err := storage.ReadVerified(ctx, st, h); err != nil {
				t.Fatalf("%s: %v", h.Key, err)
			}
		}
		if dir, ok := strings.CutPrefix(root, "file://"); ok {
			// One file system: the savepoint's objects are links.
			from := filepath.Join(dir, filepath.FromSlash(m.Operators[1].Subtasks[0].Keyed[0].Object.Key))
			to := filepath.Join(strings.TrimPrefix(dst.URL(), "file://"), "op-b-0-keyed")
			if !sameFile(t, from, to) {
				t.Fatalf("%s is a copy of %s, want a link", to, from)
			}
		}

		// A damaged object: the copy fails naming it, the folder is left empty.
		bad := m
		bad.Operators = slices.Clone(m.Operators)
		bad.Operators[1].Subtasks = slices.Clone(m.Operators[1].Subtasks)
		kh0 := bad.Operators[1].Subtasks[0].Keyed[0]
		kh0.Object.CRC ^= 1
		bad.Operators[1].Subtasks[0].Keyed = []storage.KeyedHandle{kh0}
		dst2, err := storage.OpenSavepointDir(ctx, root, storage.SavepointDirName("job1"))
		if err != nil {
			t.Fatal(err)
		}
		defer dst2.Close()
		if _, err := storage.WriteSavepoint(ctx, src, bad, dst2); err == nil || !strings.Contains(err.Error(), "op-b-0-keyed") {
			t.Fatalf("a damaged object: %v", err)
		}
		if got := mustList(t, dst2, ""); len(got) != 0 {
			t.Fatalf("a failed savepoint left %q", got)
		}
		if dir, ok := strings.CutPrefix(dst2.URL(), "file://"); ok {
			if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) != 0 {
				t.Fatalf("a failed savepoint left %q", m)
			}
		}
		if _, _, err := storage.Resolve(ctx, dst2.URL()); err == nil || !strings.Contains(err.Error(), "not a checkpoint directory") {
			t.Fatalf("resolving a failed savepoint: %v", err)
		}
	})
}
