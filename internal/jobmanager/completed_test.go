package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/restart"
)

// oneTaskManager is a JobManager with one fake TaskManager of two slots, a
// graph of a source and a sink at parallelism 1, and a checkpoint store in
// dir (closed at the test's end).
func oneTaskManager(t *testing.T) (*JobManager, *graph.JobGraph, *fakeTM, *storage.Store, string) {
	t.Helper()
	jm := New(nil)
	g := twoVertexGraph(t, 1)
	f := newFakeTM(jm, "tm-0")
	f.srcOp = g.OperatorIDs[0]
	jm.RegisterTaskManager(protocol.TaskManagerRegistration{ID: f.name, Slots: 2, NetworkMemory: 1 << 30}, f)
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return jm, g, f, store, dir
}

// TestCheckpointCompletedHook: CheckpointSpec.FirstID starts the run's
// checkpoint ids, Completed hears of each checkpoint after its metadata is
// written and before any task does, and a checkpoint whose Completed fails
// is never announced as complete (high availability's fence of sinks'
// commits).
func TestCheckpointCompletedHook(t *testing.T) {
	jm, g, f, store, dir := oneTaskManager(t)
	var mu sync.Mutex
	var recorded, refused []int64
	var paths []string
	spec := &JobSpec{ID: "job-1", Name: "completed hook", Lineage: "l", Graph: g, Network: testNetwork, Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 1, FixedDelay: restart.Zero}.WithDefaults(true),
		Checkpoints: &CheckpointSpec{Settings: coordinator.Settings{Interval: 10, TolerableFailures: 1 << 20}, Store: store, Fencing: Fencing{FirstID: 100,
			Completed: func(_ context.Context, id int64, path string) error {
				// The tasks have not heard of it yet.
				f.mu.Lock()
				told := slices.Contains(f.completes, id)
				f.mu.Unlock()
				if told {
					t.Errorf("checkpoint %d announced before Completed", id)
				}
				mu.Lock()
				defer mu.Unlock()
				if id%2 == 1 {
					refused = append(refused, id)
					return errors.New("not the leader")
				}
				// What a resume would find there: this checkpoint (later
				// ones retire it, so look now).
				if _, m, err := storage.Resolve(context.Background(), path); err != nil || m.CheckpointID != id {
					t.Errorf("checkpoint %d's path %q resolves to %+v, %v", id, path, m, err)
				}
				recorded, paths = append(recorded, id), append(paths, path)
				return nil
			}}},
	}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three recorded checkpoints", func() bool { mu.Lock(); defer mu.Unlock(); return len(recorded) >= 3 })
	if err := jm.Cancel("job-1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := jm.Wait(ctx, "job-1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if first := min(slices.Min(recorded), slices.Min(refused)); first != 100 {
		t.Errorf("first checkpoint id %d, want FirstID 100", first)
	}
	for _, id := range refused {
		if slices.Contains(f.completes, id) {
			t.Errorf("checkpoint %d was announced complete although Completed refused it (announced: %v)", id, f.completes)
		}
		// A failed record may have reached the store all the same (a
		// timeout): a later leader may restore it, so its files stay.
		if _, m, err := storage.Resolve(context.Background(), fmt.Sprintf("file://%s/job-1/chk-%d", dir, id)); err != nil || m.CheckpointID != id {
			t.Errorf("checkpoint %d, whose record failed, was deleted: %+v, %v", id, m, err)
		}
	}
	for i, id := range recorded {
		if want := fmt.Sprintf("file://%s/job-1/chk-%d", dir, id); !strings.HasSuffix(paths[i], want[len("file://"):]) {
			t.Errorf("checkpoint %d recorded at %q, want %q", id, paths[i], want)
		}
	}
	for _, id := range f.completes {
		if !slices.Contains(recorded, id) {
			t.Errorf("checkpoint %d announced complete without being recorded (recorded %v)", id, recorded)
		}
	}
}

// TestSubmitAgainAfterEnd: a job's id is refused while a run of it is
// live, and taken again once that run ended (reactive mode's rescale).
func TestSubmitAgainAfterEnd(t *testing.T) {
	jm, g, _, _, _ := oneTaskManager(t)
	spec := func() *JobSpec {
		return &JobSpec{ID: "job-1", Name: "again", Lineage: "l", Graph: g, Network: testNetwork, Restart: noRestart}
	}
	if err := jm.Submit(spec()); err != nil {
		t.Fatal(err)
	}
	if err := jm.Submit(spec()); err == nil || !strings.Contains(err.Error(), "already submitted") {
		t.Fatalf("a second run while the first is live: %v, want refused", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jm.Cancel("job-1")
	if _, err := jm.Wait(ctx, "job-1"); err != nil {
		t.Fatal(err)
	}
	if err := jm.Submit(spec()); err != nil {
		t.Fatalf("a run after the first ended: %v", err)
	}
	if ids := jm.JobIDs(); len(ids) != 1 {
		t.Errorf("job ids %v, want the one", ids)
	}
	waitFor(t, "the second run running", func() bool { info, _ := jm.Job("job-1"); return info.Status == protocol.JobRunning })
}

// TestRecordedCheckpointOutlivesAbort: a checkpoint that Completed
// recorded while the job failed (so the coordinator aborted it as its
// metadata was written) keeps its files, and the restart restores it: it
// is what the HA store points to, and restoring an older one would discard
// what its sinks staged for it.
func TestRecordedCheckpointOutlivesAbort(t *testing.T) {
	jm, g, _, store, dir := oneTaskManager(t)
	const held = 3
	entered, release := make(chan struct{}), make(chan struct{})
	spec := &JobSpec{ID: "job-1", Name: "recorded", Lineage: "l", Graph: g, Network: testNetwork,
		Restart: restart.Config{Type: restart.FixedDelay, FixedDelayAttempts: 3, FixedDelay: restart.Zero}.WithDefaults(true),
		Checkpoints: &CheckpointSpec{Settings: coordinator.Settings{Interval: 10}, Store: store,
			Fencing: Fencing{Completed: func(_ context.Context, id int64, _ string) error {
				if id == held {
					close(entered)
					<-release
				}
				return nil
			}}},
	}
	if err := jm.Submit(spec); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("checkpoint 3 was never recorded")
	}
	// The job fails while checkpoint 3 is being recorded: it is aborted.
	jm.UpdateTaskState(protocol.TaskStateUpdate{Exec: ExecutionID{Job: "job-1", Vertex: 1, Subtask: 0},
		State: protocol.TaskFailed, Failure: &protocol.Failure{Message: "boom"}})
	// The restart waits for the write in flight.
	time.Sleep(200 * time.Millisecond)
	if info, _ := jm.Job("job-1"); info.Restarts != 0 {
		t.Errorf("the job restarted while checkpoint 3 was being recorded")
	}
	close(release)
	waitFor(t, "the restart restoring checkpoint 3", func() bool {
		info, _ := jm.Job("job-1")
		st, _ := jm.Checkpoints("job-1")
		return info.Restarts == 1 && st.RestoredFrom == held
	})
	if _, _, err := storage.Resolve(context.Background(), "file://"+dir+"/job-1/chk-3"); err != nil {
		t.Errorf("the recorded checkpoint's files are gone: %v", err)
	}
	jm.Cancel("job-1")
}
