package file_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// 300,000 lines through a job with checkpoints every 10 ms and task
// failures at random records: the output holds every line exactly once, in
// a handful of part files (a few per subtask and failure; one part per
// subtask per checkpoint made thousands), since parts stay open across
// checkpoints and roll on Flink's size and time rules.
func TestSinkJobFewFilesExactlyOnce(t *testing.T) {
	r := testseed.Rand(t, 0)
	lines := 300_000
	if testing.Short() {
		lines = 60_000
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	p := 1 + r.IntN(4)
	want := make([]string, lines)
	bs := make([]strings.Builder, p) // a file per subtask
	for i := range want {
		want[i] = fmt.Sprintf("line-%07d-%x", i, r.Uint32())
		bs[i%p].WriteString(want[i] + "\n")
	}
	for i := range bs {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("in-%d.txt", i)), []byte(bs[i].String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	failures := 1 + r.IntN(3)
	var failAt []int64 // records seen (over all attempts) at which a task fails
	for range failures {
		failAt = append(failAt, 1+r.Int64N(int64(lines)))
	}
	slices.Sort(failAt)
	t.Logf("%d lines, parallelism %d, failures at records %v", lines, p, failAt)
	var seen, fired atomic.Int64
	cfg := weir.Config{Parallelism: p,
		Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: filepath.Join(dir, "checkpoints"), TolerableFailures: 1000},
		Restart:       map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "100", "restart-strategy.fixed-delay.delay": "0 ms"},
	}
	env := weir.NewEnvironment(cfg)
	src := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: in, RatePerSecond: float64(lines) / 2}, in).UID("lines")
	text := weir.Process(src, weir.ProcessFunc[file.Line, string](func(_ weir.Context, l file.Line, out weir.Collector[string]) error {
		n := seen.Add(1)
		if k := fired.Load(); k < int64(len(failAt)) && n >= failAt[k] && fired.CompareAndSwap(k, k+1) {
			return fmt.Errorf("injected failure %d at record %d", k+1, n)
		}
		out.Collect(l.Text)
		return nil
	})).UID("fail")
	weir.WriteFiles(text, out, nil).UID("sink")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := env.Execute(ctx, "file-sink-rolling"); err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	got, files := outputLines(t, out)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		missing, extra := diffSorted(want, got)
		t.Fatalf("%d lines in the output, want %d; missing %d (%.3q), extra %d (%.3q); %d failures fired", len(got), len(want), len(missing), missing, len(extra), extra, fired.Load())
	}
	// At most: per subtask and attempt, the part committed when the attempt
	// ends or is restored, and the last one at the end of input.
	if limit := p * (2 + 2*int(fired.Load())); files > limit {
		t.Fatalf("%d part files for %d lines at parallelism %d with %d failures, want at most %d", files, lines, p, fired.Load(), limit)
	}
	t.Logf("%d part files, %d failures fired", files, fired.Load())
}

// outputLines reads the committed part files of dir: their lines, unsorted,
// and how many files.
func outputLines(t *testing.T, dir string) (lines []string, files int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		files++
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
	}
	return lines, files
}

// A job canceled half way and resumed from its latest checkpoint into
// another output directory: the union of both directories holds every
// input line exactly once (the reference is the input itself), and the
// first directory only lines of the first run.
func TestSinkJobResumeIntoAnotherDirectory(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	p := 1 + r.IntN(3)
	want := make([]string, 40_000)
	bs := make([]strings.Builder, p)
	for i := range want {
		want[i] = fmt.Sprintf("line-%06d-%x", i, r.Uint32())
		bs[i%p].WriteString(want[i] + "\n")
	}
	for i := range bs {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("in-%d.txt", i)), []byte(bs[i].String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	run := func(out string, rate float64, resume string, timeout time.Duration) error {
		cfg := weir.Config{Parallelism: p, ResumeFrom: resume,
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: filepath.Join(dir, "checkpoints")}}
		env := weir.NewEnvironment(cfg)
		src := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: in, RatePerSecond: rate}, in).UID("lines")
		text := weir.Map(src, func(l file.Line) string { return l.Text }).UID("text")
		// Parts roll at 64 KiB: some are pending when the run ends.
		weir.SinkToCommitting[string, file.Committable](text, file.Sink[string]{Dir: out, RollSize: 64 << 10}, out).UID("sink")
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := env.Execute(ctx, "file-sink-moved")
		return err
	}
	out1, out2 := filepath.Join(dir, "out1"), filepath.Join(dir, "out2")
	delay := time.Duration(700+r.IntN(800)) * time.Millisecond
	if err := run(out1, float64(len(want))/3, "", delay); err == nil {
		t.Fatal("the first run finished; it was meant to be canceled half way")
	}
	first, _ := outputLines(t, out1)
	if len(first) >= len(want) {
		t.Fatalf("canceled after %v with %d of %d lines committed; the test needs a cancel in the middle", delay, len(first), len(want))
	}
	if err := run(out2, 0, "latest", time.Minute); err != nil {
		t.Fatalf("the resumed run: %v", err)
	}
	a, _ := outputLines(t, out1)
	b, _ := outputLines(t, out2)
	got := slices.Sorted(slices.Values(append(a, b...)))
	if !slices.Equal(got, want) {
		missing, extra := diffSorted(want, got)
		t.Fatalf("%d lines in both outputs, want %d; missing %d (%.3q), extra %d (%.3q)", len(got), len(want), len(missing), missing, len(extra), extra)
	}
	t.Logf("canceled after %v: %d lines committed then, %d in the first directory after the resume, %d in the second", delay, len(first), len(a), len(b))
}

// 30,000 lines through a job with checkpoints every 10 ms whose parts roll
// at every checkpoint and flush (RollInterval 1 ns: more parts than
// checkpoints per subtask), compacted at 16 KiB or every 8 checkpoints,
// with task failures at random records: the output holds every line
// exactly once (the reference is the input), in at most one file per 16
// KiB of output and, per subtask, one per 8 checkpoints, the last, and
// two per failure (the open part and the group the restore commits); and
// no hidden file but the commit markers is left.
func TestSinkJobCompactsSmallFiles(t *testing.T) {
	r := testseed.Rand(t, 0)
	const lines, small, maxCheckpoints = 30_000, 16 << 10, 8
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	p := 1 + r.IntN(3)
	want := make([]string, lines)
	bs := make([]strings.Builder, p)
	size := 0
	for i := range want {
		want[i] = fmt.Sprintf("line-%06d-%x", i, r.Uint32())
		bs[i%p].WriteString(want[i] + "\n")
		size += len(want[i]) + 1
	}
	for i := range bs {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("in-%d.txt", i)), []byte(bs[i].String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	failures := r.IntN(3)
	var failAt []int64
	for range failures {
		failAt = append(failAt, 1+r.Int64N(lines))
	}
	slices.Sort(failAt)
	t.Logf("%d lines, parallelism %d, failures at records %v", lines, p, failAt)
	var seen, fired atomic.Int64
	cfg := weir.Config{Parallelism: p,
		Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: filepath.Join(dir, "checkpoints"), TolerableFailures: 1000},
		Restart:       map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "100", "restart-strategy.fixed-delay.delay": "0 ms"},
	}
	env := weir.NewEnvironment(cfg)
	src := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: in, RatePerSecond: lines / 1.5}, in).UID("lines")
	text := weir.Process(src, weir.ProcessFunc[file.Line, string](func(_ weir.Context, l file.Line, out weir.Collector[string]) error {
		n := seen.Add(1)
		if k := fired.Load(); k < int64(len(failAt)) && n >= failAt[k] && fired.CompareAndSwap(k, k+1) {
			return fmt.Errorf("injected failure %d at record %d", k+1, n)
		}
		out.Collect(l.Text)
		return nil
	})).UID("fail")
	s := file.Sink[string]{Dir: out, RollInterval: time.Nanosecond,
		Compact: &file.CompactPolicy{SmallerThan: small, MaxCheckpoints: maxCheckpoints}}
	weir.SinkToCommitting[string, file.Committable](text, s, out).UID("sink")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := env.Execute(ctx, "file-sink-compaction")
	if err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	got, files := outputLines(t, out)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		missing, extra := diffSorted(want, got)
		t.Fatalf("%d lines in the output, want %d; missing %d (%.3q), extra %d (%.3q); %d failures fired", len(got), len(want), len(missing), missing, len(extra), extra, fired.Load())
	}
	limit := size/small + p*(1+int(res.Checkpoints)/maxCheckpoints+2*int(fired.Load()))
	if files > limit {
		t.Fatalf("%d part files for %d bytes at parallelism %d, %d checkpoints, %d failures; want at most %d", files, size, p, res.Checkpoints, fired.Load(), limit)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), ".weir-commit-") {
			t.Errorf("hidden file left: %s", e.Name())
		}
	}
	t.Logf("%d part files for %d bytes at parallelism %d, %d checkpoints, %d failures fired", files, size, p, res.Checkpoints, fired.Load())
}

// A job with compaction whose groups stay held (no checkpoint bound) is
// stopped with a savepoint at a random moment: the stopped output holds no
// line twice, no hidden file but the markers (the held groups were
// compacted and committed as the job ended: the stopped output is whole),
// and a run resumed from the savepoint at another parallelism completes
// the output to exactly the input (the reference).
func TestSinkJobCompactStopThenResume(t *testing.T) {
	r := testseed.Rand(t, 0)
	const lines = 20_000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	want := make([]string, lines)
	var b strings.Builder
	for i := range want {
		want[i] = fmt.Sprintf("line-%06d-%x", i, r.Uint32())
		b.WriteString(want[i] + "\n")
	}
	if err := os.WriteFile(filepath.Join(in, "in.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	run := func(p int, rate float64, resume string) (*weir.Job, error) {
		cfg := weir.Config{Parallelism: p, ResumeFrom: resume, RESTAddr: "127.0.0.1:0",
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: filepath.Join(dir, "checkpoints")}}
		env := weir.NewEnvironment(cfg)
		src := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: in, RatePerSecond: rate}, in).UID("lines")
		text := weir.Map(src, func(l file.Line) string { return l.Text }).UID("text")
		s := file.Sink[string]{Dir: out, RollInterval: time.Nanosecond, Compact: &file.CompactPolicy{SmallerThan: 1 << 20, MaxCheckpoints: -1}}
		weir.SinkToCommitting[string, file.Committable](text, s, out).UID("sink")
		return env.ExecuteAsync(context.Background(), "file-sink-compact-stop")
	}
	p := 1 + r.IntN(3)
	job, err := run(p, lines/2, "")
	if err != nil {
		t.Fatal(err)
	}
	c := rest.NewClient(job.RESTAddr(), nil)
	delay := time.Duration(300+r.IntN(900)) * time.Millisecond
	time.Sleep(delay)
	rid, err := c.StopWithSavepoint(context.Background(), job.ID(), rest.StopRequest{TargetDirectory: filepath.Join(dir, "savepoints")})
	if err != nil {
		// The cluster is gone when the job ended before the stop: say how.
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		res, werr := job.Wait(wctx)
		t.Fatalf("stop after %v at parallelism %d: %v; the job: %+v, %v", delay, p, err, res, werr)
	}
	loc := waitSavepoint(t, c, job.ID(), rid)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := job.Wait(ctx); err != nil {
		t.Fatalf("the stopped job did not end FINISHED: %v", err)
	}
	stopped, files := outputLines(t, out)
	slices.Sort(stopped)
	if len(stopped) == 0 || len(stopped) >= lines {
		t.Fatalf("stopped after %v with %d of %d lines committed; the test needs a stop in the middle", delay, len(stopped), lines)
	}
	if _, extra := diffSorted(want, stopped); len(extra) > 0 || len(slices.Compact(slices.Clone(stopped))) != len(stopped) {
		t.Fatalf("the stopped output holds lines twice or not in the input: %.3q", extra)
	}
	for _, h := range hidden(t, out) {
		if !strings.HasPrefix(h, ".weir-commit-") {
			t.Fatalf("hidden file left at the stop (the stopped output is not whole): %s", h)
		}
	}
	t.Logf("stopped after %v at parallelism %d: %d lines in %d files, savepoint %s", delay, p, len(stopped), files, loc)
	p2 := 1 + r.IntN(3)
	job, err = run(p2, 0, loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	got, files := outputLines(t, out)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		missing, extra := diffSorted(want, got)
		t.Fatalf("%d lines after the resume at parallelism %d, want %d; missing %d (%.3q), extra %d (%.3q)", len(got), p2, len(want), len(missing), missing, len(extra), extra)
	}
	t.Logf("resumed at parallelism %d: %d lines in %d files", p2, len(got), files)
}

// waitSavepoint polls the savepoint operation rid of job until it
// completes and returns its location.
func waitSavepoint(t *testing.T, c *rest.Client, jobID, rid string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := c.SavepointStatus(context.Background(), jobID, rid)
		if err != nil {
			t.Fatalf("polling savepoint %s: %v", rid, err)
		}
		if res.Status.ID != rest.StatusCompleted {
			continue
		}
		if res.Operation == nil || res.Operation.FailureCause != nil {
			t.Fatalf("savepoint %s failed: %+v", rid, res.Operation)
		}
		return res.Operation.Location
	}
	t.Fatalf("savepoint %s did not complete within a minute", rid)
	return ""
}
