package weir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
	"go.uber.org/goleak"
)

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// A checkpointing job's checkpoints are in the REST API, shaped like
// Flink's: counts, history with per-vertex and per-subtask acks, config.
func TestRESTCheckpoints(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	dir := t.TempDir()
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0",
		Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: filepath.Join(dir, "ck"), Retained: 2}})
	src := weir.Generate(env, -1, 5000, func(i int64) int64 { return i })
	weir.Discard(weir.Reduce(weir.KeyBy(src, func(v int64) int64 { return v % 7 }), func(a, b int64) int64 { return a + b }).Name("Sum"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + job.RESTAddr() + "/jobs/" + job.ID()
	var st rest.CheckpointingStatistics
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code := getJSON(t, base+"/checkpoints", &st); code != http.StatusOK {
			t.Fatalf("GET checkpoints: %d", code)
		}
		if st.Counts.Completed >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 3 completed checkpoints after 10s: %+v", st.Counts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := st.Latest.Completed
	if c == nil || c.Status != "COMPLETED" || c.NumSubtasks != 4 || c.NumAcknowledgedSubtask != 4 || c.StateSize <= 0 ||
		c.ExternalPath == "" || len(c.Tasks) != 2 || c.CheckpointType != "CHECKPOINT" {
		t.Fatalf("latest completed: %+v", c)
	}
	if len(st.History) < 3 || st.History[0].ID <= st.History[len(st.History)-1].ID {
		t.Fatalf("history not newest first: %+v", st.History)
	}
	var vid string
	for v := range c.Tasks {
		vid = v
	}
	var d rest.TaskCheckpointDetails
	if code := getJSON(t, fmt.Sprintf("%s/checkpoints/details/%d/subtasks/%s", base, c.ID, vid), &d); code != http.StatusOK {
		t.Fatalf("GET subtasks: %d", code)
	}
	if len(d.Subtasks) != 2 || d.Subtasks[0].Status != "completed" || d.Subtasks[0].Checkpoint == nil {
		t.Fatalf("subtasks: %+v", d)
	}
	var one rest.CheckpointStatistics
	if code := getJSON(t, fmt.Sprintf("%s/checkpoints/details/%d", base, c.ID), &one); code != http.StatusOK || one.ID != c.ID {
		t.Fatalf("GET details: %d %+v", code, one)
	}
	var cfg rest.CheckpointConfigInfo
	if code := getJSON(t, base+"/checkpoints/config", &cfg); code != http.StatusOK || cfg.Mode != "exactly_once" ||
		cfg.Interval != 20 || cfg.NumRetained != 2 || cfg.StateBackend != "hashmap" || !cfg.CheckpointsAfterTasksFinish {
		t.Fatalf("config: %d %+v", code, cfg)
	}
	cancel()
	<-job.Done()
}

// A streaming job without checkpoints answers as Flink's does: it has a
// checkpoint coordinator, for savepoints, so its statistics are
// there, with none taken, and its configuration's interval is Flink's
// Long.MAX_VALUE, "periodic checkpoints disabled".
func TestRESTCheckpointsDisabled(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{RESTAddr: "127.0.0.1:0"})
	weir.Discard(weir.Generate(env, -1, 100, func(i int64) int64 { return i }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "no-checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	var st rest.CheckpointingStatistics
	base := "http://" + job.RESTAddr() + "/jobs/" + job.ID()
	if code := getJSON(t, base+"/checkpoints", &st); code != http.StatusOK || st.Counts.Total != 0 {
		t.Fatalf("GET checkpoints of a job without: %d %+v", code, st.Counts)
	}
	var cfg rest.CheckpointConfigInfo
	if code := getJSON(t, base+"/checkpoints/config", &cfg); code != http.StatusOK || cfg.Interval != math.MaxInt64 {
		t.Fatalf("GET checkpoints/config of a job without: %d, interval %d", code, cfg.Interval)
	}
	cancel()
	<-job.Done()
}
