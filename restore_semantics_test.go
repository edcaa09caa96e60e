package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/jobs/keyedcount"
	"github.com/weirhq/weir/state"
)

// logBuffer is a bytes.Buffer safe for the engine's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restoreJob describes one run of the job the restore tests change between
// runs: lines -> parse -> [keyed count] -> discard.
type restoreJob struct {
	withCount bool
	countUID  string // "" leaves the keyed operator without a UID
	cfg       weir.Config
	// counter replaces keyedcount.Counter when set.
	counter weir.KeyedProcessFunction[string, keyedcount.Record, keyedcount.Count]
}

func writeRestoreInput(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.tsv")
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "k%d\t%d\n", i%17, i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (rj restoreJob) run(t *testing.T, input, ckptDir string) error {
	t.Helper()
	cfg := rj.cfg
	cfg.Checkpointing = &weir.CheckpointConfig{Interval: time.Hour, Dir: ckptDir, Incremental: cfg.Checkpointing != nil && cfg.Checkpointing.Incremental}
	env := weir.NewEnvironment(cfg)
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: input}, "lines").UID("lines")
	records := weir.Process(lines, weir.ProcessFunc[file.Line, keyedcount.Record](func(_ weir.Context, l file.Line, out weir.Collector[keyedcount.Record]) error {
		r, err := keyedcount.Parse(l)
		if err == nil {
			out.Collect(r)
		}
		return err
	})).Name("Parse").UID("parse")
	if rj.withCount {
		keyed := weir.KeyBy(records, func(r keyedcount.Record) string { return r.Key })
		var fn weir.KeyedProcessFunction[string, keyedcount.Record, keyedcount.Count] = &keyedcount.Counter{}
		if rj.counter != nil {
			fn = rj.counter
		}
		counts := weir.ProcessKeyed[string, keyedcount.Record, keyedcount.Count](keyed, fn).Name("Count")
		if rj.countUID != "" {
			counts = counts.UID(rj.countUID)
		}
		weir.Discard(counts)
	} else {
		weir.Discard(records)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := env.Execute(ctx, "restore-semantics")
	return err
}

// firstRun runs the job with its keyed operator to the end (a final
// checkpoint holds the counter's state) and returns the checkpoint dir.
func firstRun(t *testing.T, input, countUID string, cfg weir.Config) string {
	t.Helper()
	dir := t.TempDir()
	if err := (restoreJob{withCount: true, countUID: countUID, cfg: cfg}).run(t, input, dir); err != nil {
		t.Fatalf("first run: %v", err)
	}
	return dir
}

// Dropping an operator that had state fails the resume, naming it and how
// to proceed; with AllowNonRestoredState the run goes on and a log line
// names the skipped operator.
func TestResumeWithoutAnOperatorThatHadState(t *testing.T) {
	input := writeRestoreInput(t)
	for _, uid := range []string{"count", ""} {
		t.Run("uid="+uid, func(t *testing.T) {
			dir := firstRun(t, input, uid, weir.Config{})
			err := restoreJob{cfg: weir.Config{ResumeFrom: "latest"}}.run(t, input, dir)
			if err == nil {
				t.Fatal("resuming without the keyed operator succeeded; want an error naming it")
			}
			msg := err.Error()
			want := []string{`operator "Count"`, "--allow-non-restored-state", "which this job does not have"}
			if uid != "" {
				want = append(want, `uid "count"`, "give the operator its old UID")
			} else {
				want = append(want, "no uid; stable ID ")
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}

			var logs logBuffer
			cfg := weir.Config{ResumeFrom: "latest", AllowNonRestoredState: true,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			if err := (restoreJob{cfg: cfg}).run(t, input, dir); err != nil {
				t.Fatalf("with AllowNonRestoredState: %v", err)
			}
			if l := logs.String(); !strings.Contains(l, "skipping state of an operator") || !strings.Contains(l, `\"Count\"`) {
				t.Errorf("no log line names the skipped operator; logs:\n%s", l)
			}
		})
	}
}

// A stateful operator without a UID gets one warning at submission that
// lists it; with UIDs everywhere there is none.
func TestMissingUIDWarning(t *testing.T) {
	input := writeRestoreInput(t)
	for _, uid := range []string{"", "count"} {
		var logs logBuffer
		cfg := weir.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		if err := (restoreJob{withCount: true, countUID: uid, cfg: cfg}).run(t, input, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		l := logs.String()
		n := strings.Count(l, "stateful operators without a UID")
		switch {
		case uid == "" && (n != 1 || !strings.Contains(l, `\"Count\" (keyed)`)):
			t.Errorf("want one warning naming \"Count\", got %d; logs:\n%s", n, l)
		case uid != "" && n != 0:
			t.Errorf("every stateful operator has a UID, yet %d warnings; logs:\n%s", n, l)
		}
	}
}

// Changing max parallelism is refused through a real resume, with a
// message naming the operator, both values and why.
func TestResumeWithAnotherMaxParallelism(t *testing.T) {
	input := writeRestoreInput(t)
	dir := firstRun(t, input, "count", weir.Config{})
	err := restoreJob{withCount: true, countUID: "count", cfg: weir.Config{ResumeFrom: "latest", MaxParallelism: 256}}.run(t, input, dir)
	if err == nil {
		t.Fatal("resuming with max parallelism 256 from a checkpoint at 128 succeeded")
	}
	for _, w := range []string{`uid "count"`, "max parallelism 128", "has 256 now", "fixed when a job first runs"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	// The same max parallelism resumes.
	if err := (restoreJob{withCount: true, countUID: "count", cfg: weir.Config{ResumeFrom: "latest", MaxParallelism: 128}}).run(t, input, dir); err != nil {
		t.Fatalf("resuming with the same max parallelism: %v", err)
	}
}

// A max parallelism the job does not set is taken from the checkpoint (as
// in Flink): the first run set 64, the resumed job sets none (its derived
// default is 128), and the checkpoint's 64 key groups are kept. (The same
// rule lets a job resumed at parallelism 86 or more, whose derived default
// is 256, keep 128.)
func TestResumeAdoptsMaxParallelism(t *testing.T) {
	input := writeRestoreInput(t)
	dir := firstRun(t, input, "count", weir.Config{Parallelism: 2, MaxParallelism: 64})
	cfg := weir.Config{ResumeFrom: "latest", Parallelism: 3}
	if err := (restoreJob{withCount: true, countUID: "count", cfg: cfg}).run(t, input, dir); err != nil {
		t.Fatalf("resuming without a max parallelism: %v", err)
	}
}

// Keyed state in Pebble's native format (incremental checkpoints) restores
// into Pebble only; into the heap backend the run fails before it deploys,
// naming the operator and both formats.
func TestResumeNativePebbleIntoHeap(t *testing.T) {
	input := writeRestoreInput(t)
	pebble := weir.Config{StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{Incremental: true}}
	dir := firstRun(t, input, "count", pebble)
	err := restoreJob{withCount: true, countUID: "count", cfg: weir.Config{ResumeFrom: "latest"}}.run(t, input, dir)
	if err == nil {
		t.Fatal("a native Pebble checkpoint restored into the heap backend")
	}
	for _, w := range []string{`uid "count"`, "native format", "hashmap backend", "canonical"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	pebble.ResumeFrom = "latest"
	if err := (restoreJob{withCount: true, countUID: "count", cfg: pebble}).run(t, input, dir); err != nil {
		t.Fatalf("native checkpoint into pebble: %v", err)
	}
}

// stringCounter declares keyed-count's state "count-sum" with another type
// (string instead of tuple.T2[int64, int64]): a codec change.
type stringCounter struct{ s state.ValueState[string] }

func (c *stringCounter) Open(ctx weir.KeyedRuntimeContext) error {
	cd, err := codec.For[string]()
	if err != nil {
		return err
	}
	c.s = state.GetValueState(ctx.State(), state.ValueDescriptor[string]{Name: "count-sum", Codec: cd})
	return nil
}

func (c *stringCounter) ProcessElement(_ weir.KeyedContext[string], r keyedcount.Record, _ weir.Collector[keyedcount.Count]) error {
	c.s.Update(r.Key)
	return nil
}

// A state whose declared type changed fails the restore, naming the state
// and both codecs, on both backends and from native Pebble checkpoints. The
// failure is permanent: under the default restart strategy (exponential
// delay, never giving up) the job still fails at once.
func TestResumeWithAnotherStateCodec(t *testing.T) {
	input := writeRestoreInput(t)
	for _, tc := range []struct {
		name string
		cfg  weir.Config
	}{
		{"hashmap", weir.Config{}},
		{"pebble", weir.Config{StateBackend: "pebble"}},
		{"pebble-native", weir.Config{StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{Incremental: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := firstRun(t, input, "count", tc.cfg)
			cfg := tc.cfg
			cfg.ResumeFrom = "latest"
			err := restoreJob{withCount: true, countUID: "count", cfg: cfg, counter: &stringCounter{}}.run(t, input, dir)
			if err == nil {
				t.Fatal("restoring count-sum as a string state succeeded")
			}
			t.Logf("error: %v", err)
			for _, w := range []string{`state "count-sum"`, `"tuple.T2[int64,int64]"`, `"string"`, "migration", "Count"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// The unchanged job still resumes.
			if err := (restoreJob{withCount: true, countUID: "count", cfg: cfg}).run(t, input, dir); err != nil {
				t.Fatalf("resuming the unchanged job: %v", err)
			}
		})
	}
}
