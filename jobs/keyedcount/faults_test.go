package keyedcount_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// failer fails the job once, in attempt attempt, when subtask sub has seen
// at records: an injected task failure.
type failer[T any] struct {
	plan   map[[2]int]int // (attempt, subtask) -> record count at which to fail
	fired  *atomic.Int64  // failures injected
	ctx    weir.RuntimeContext
	seen   int
	failAt int
	slow   bool // a millisecond every 2 records: backpressure upstream
}

func (f *failer[T]) Open(ctx weir.RuntimeContext) error {
	f.ctx = ctx
	f.failAt = -1
	if n, ok := f.plan[[2]int{ctx.Attempt(), ctx.Subtask()}]; ok {
		f.failAt = n
	}
	return nil
}

func (f *failer[T]) ProcessElement(_ weir.Context, v T, out weir.Collector[T]) error {
	f.seen++
	if f.slow && f.seen%2 == 0 {
		time.Sleep(time.Millisecond)
	}
	if f.seen == f.failAt {
		f.fired.Add(1)
		return fmt.Errorf("injected failure in %s at record %d of attempt %d", f.ctx.TaskName(), f.seen, f.ctx.Attempt())
	}
	out.Collect(v)
	return nil
}

// The committed output of the keyed-count job equals the failure-free
// result whatever fails: tasks at random points (in the source chain or the
// keyed chain), and checkpoint writes that fail or are slow, over many
// seeds, at random parallelism, both backends, aligned and unaligned.
// WEIR_FAULT_CASES sets the number of seeds (scripts/soak runs thousands).
func TestExactlyOnceUnderInjectedFailures(t *testing.T) {
	cases := 200
	if testing.Short() {
		cases = 20
	}
	if v := os.Getenv("WEIR_FAULT_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WEIR_FAULT_CASES=%q: want a whole number of seeds, at least 1", v)
		}
		cases = n
	}
	base := testseed.New(t)
	for i := range cases {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("rerun with WEIR_SEED=%d -run 'TestExactlyOnceUnderInjectedFailures/%d'", base, seed)
			runFaultCase(t, seed)
		})
	}
}

func runFaultCase(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	var files []string
	for i := range 1 + r.IntN(4) {
		files = append(files, filepath.Join(in, fmt.Sprintf("part-%d.txt", i)))
	}
	n, keys := 300+r.IntN(1500), 1+r.IntN(30)
	p := 1 + r.IntN(4)
	backend := []string{"hashmap", "pebble"}[r.IntN(2)]
	// Aligned, unaligned, or aligned until a timeout turns them unaligned.
	unaligned := r.IntN(3) == 0
	alignedTimeout := time.Duration(0)
	if !unaligned && r.IntN(2) == 0 {
		alignedTimeout = time.Duration(1+r.IntN(15)) * time.Millisecond
	}
	incremental := backend == "pebble" && r.IntN(2) == 0
	interval := time.Duration(10+r.IntN(30)) * time.Millisecond
	// From a stream of its own, so that the choices above stay what they
	// were for a seed: sometimes keys of up to a few KiB (records span
	// network buffers), sometimes a slow keyed chain behind an unthrottled
	// source (backpressure: barriers overtake full buffers).
	r2 := rand.New(rand.NewPCG(seed, 9))
	pad := 0
	if r2.IntN(3) == 0 {
		pad = 1 + r2.IntN(4000)
	}
	slow := r2.IntN(3) == 0
	// Sometimes checkpoint writes may only buffer one at a time
	// (CheckpointConfig.WriteMemory), so that subtasks upload in turns.
	oneWriter := r2.IntN(3) == 0
	want := writeWideInputFiles(t, files, r, n, keys, pad)

	// Task failures: up to three attempts fail, each in one subtask of the
	// source chain or of the keyed chain, after a random number of records.
	srcPlan, keyedPlan := map[[2]int]int{}, map[[2]int]int{}
	failures := r.IntN(4)
	for a := range failures {
		plan := srcPlan
		if r.IntN(2) == 0 {
			plan = keyedPlan
		}
		at := 1 + r.IntN(len(want)/(2*p)+1)
		if slow {
			// The keyed chain takes ~0.5 ms a record: fail after the
			// first checkpoints had time to complete, so that restores
			// from them happen under backpressure.
			at += 60
		}
		plan[[2]int{a, r.IntN(p)}] = at
	}
	var fired atomic.Int64

	// Checkpoint storage faults: writes fail now and then, and are slow.
	// A checkpoint fails if any of its writes does, and the job ends only
	// once a final checkpoint completes (it commits the sink's files). An
	// incremental Pebble checkpoint writes about seven objects a keyed
	// subtask (its native files, timers, channel state) where a canonical
	// one writes one or two: at the same rate per write, 10% would fail
	// ~95% of its checkpoints at parallelism 4, and on a loaded machine the
	// final checkpoint would outlast the job's deadline. So the
	// rate per write is lower there, for a comparable rate per checkpoint.
	errorRate := 0.05 * float64(r.IntN(3))
	if incremental {
		errorRate /= 5
	}
	url := fmt.Sprintf("mem://faults-%d", seed)
	faults := &storage.Faults{Rand: rand.New(rand.NewPCG(seed, 8)), ErrorRate: errorRate,
		MaxDelay: time.Duration(r.IntN(3)) * time.Millisecond, Ops: []string{storage.OpPut, storage.OpWrite}}
	var mu sync.Mutex
	undo := storage.Intercept(url, func(s *storage.Store) *storage.Store {
		f := faults.Func()
		return storage.WithFaults(s, func(op, key string) (time.Duration, error) {
			mu.Lock() // the Faults' generator is not safe for concurrent use
			defer mu.Unlock()
			if strings.HasSuffix(key, storage.MetadataName) && op == storage.OpPut {
				return f(storage.OpWrite, key)
			}
			return f(op, key)
		})
	})
	defer undo()
	t.Logf("lines %d, parallelism %d, %s (incremental %t), unaligned %t, aligned timeout %v, interval %v, task failures %d, storage error rate %.2f, key padding %d, slow keyed chain %t, one writer at a time %t",
		len(want), p, backend, incremental, unaligned, alignedTimeout, interval, failures, faults.ErrorRate, pad, slow, oneWriter)

	restarts := &countingHandler{}
	cfg := weir.Config{Parallelism: p, StateBackend: backend, Logger: slog.New(restarts),
		Checkpointing: &weir.CheckpointConfig{Interval: interval, Dir: url, Unaligned: unaligned || alignedTimeout > 0, AlignedTimeout: alignedTimeout,
			Incremental: incremental, TolerableFailures: 1000},
		Restart: map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "100", "restart-strategy.fixed-delay.delay": "0 ms"},
	}
	if oneWriter {
		cfg.Checkpointing.WriteMemory = 5 << 20 // one writer of a bucket store (mem://)
	}
	env := weir.NewEnvironment(cfg)
	// Throttled so that the run spans a few dozen checkpoints.
	rate := float64(len(want)) / 0.25
	if slow {
		rate = 0
	}
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: in, RatePerSecond: rate}, in).UID("lines")
	lines = weir.Process(lines, weir.ProcessFunction[file.Line, file.Line](&failer[file.Line]{plan: srcPlan, fired: &fired})).Name("Fail in source chain").UID("fail-src")
	records := weir.Process(lines, weir.ProcessFunc[file.Line, keyedcount.Record](func(_ weir.Context, l file.Line, out weir.Collector[keyedcount.Record]) error {
		rec, err := keyedcount.Parse(l)
		if err == nil {
			out.Collect(rec)
		}
		return err
	})).Name("Parse").UID("parse")
	counts := weir.ProcessKeyed[string, keyedcount.Record, keyedcount.Count](weir.KeyBy(records, func(x keyedcount.Record) string { return x.Key }), &keyedcount.Counter{}).Name("Count").UID("count")
	counts = weir.Process(counts, weir.ProcessFunction[keyedcount.Count, keyedcount.Count](&failer[keyedcount.Count]{plan: keyedPlan, fired: &fired, slow: slow})).Name("Fail in keyed chain").UID("fail-keyed")
	weir.WriteFiles(counts, out, keyedcount.Format).UID("sink")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A job that outlives its deadline is stuck somewhere: keep the
	// goroutines' stacks of that moment to print if it then fails.
	var stuck bytes.Buffer
	dumped := make(chan struct{})
	dump := time.AfterFunc(21*time.Second, func() {
		pprof.Lookup("goroutine").WriteTo(&stuck, 2)
		close(dumped)
	})
	_, err := env.Execute(ctx, "keyed-count-faults")
	if !dump.Stop() {
		<-dumped
		t.Logf("goroutines 1 s past the job's deadline:\n%s", stuck.String())
	}
	if err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	got := committed(t, out)
	if !slices.Equal(got, want) {
		missing, extra := diff(want, got)
		t.Fatalf("committed output differs from the failure-free result: %d lines, want %d; missing %d (e.g. %q), extra %d (e.g. %q); %d task failures fired, %d storage faults",
			len(got), len(want), len(missing), first(missing), len(extra), first(extra), fired.Load(), faults.Injected(""))
	}
	t.Logf("%d task failures fired, %d storage faults injected; restarts from a checkpoint %d, from the beginning %d",
		fired.Load(), faults.Injected(""), restarts.fromCheckpoint.Load(), restarts.fromStart.Load())
}

// countingHandler counts the job's restarts by what they restored.
type countingHandler struct {
	fromCheckpoint, fromStart atomic.Int64
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	// WEIR_TEST_LOG=info|debug prints the job's log, to follow a seed.
	if l := os.Getenv("WEIR_TEST_LOG"); l == "debug" || l == "info" && r.Level >= slog.LevelInfo {
		var sb strings.Builder
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value); return true })
		fmt.Fprintln(os.Stderr, r.Time.Format("15:04:05.000"), r.Message, sb.String())
	}
	if r.Message != "job restarted" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "from" {
			if strings.HasPrefix(a.Value.String(), "checkpoint") {
				h.fromCheckpoint.Add(1)
			} else {
				h.fromStart.Add(1)
			}
		}
		return true
	})
	return nil
}

// diff returns the lines of a not in b and of b not in a, as multisets.
func diff(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
