package weir_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
)

// readAll reads a Collect sink in its own goroutine, as a program would
// while it does something else; the result arrives once All returns.
func readAll[T any](c *weir.Collected[T]) <-chan []T {
	out := make(chan []T, 1)
	go func() {
		var got []T
		for v := range c.All() {
			got = append(got, v)
		}
		out <- got
	}()
	return out
}

// within fails the test if All has not returned within a generous time: a
// reader must never be left waiting for a job that ended or never ran.
func within[T any](t *testing.T, res <-chan []T, what string) []T {
	t.Helper()
	select {
	case got := <-res:
		return got
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: All did not return within 30 s", what)
		return nil
	}
}

// A program may start reading a Collect sink before it starts the job (the
// race detector caught the sink reading its job's end before ExecuteAsync
// had set it) or after, and reads every element once, over two runs of the
// same environment: the first read before its job starts, the second after.
func TestCollectReadBeforeTheJobStarts(t *testing.T) {
	rng := testseed.Rand(t, 1)
	in := make([]int64, 5000+rng.IntN(5000))
	var want []int64
	for i := range in {
		in[i] = rng.Int64N(1 << 40)
		want = append(want, 3*in[i]+1)
	}
	slices.Sort(want)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	c := weir.Collect(weir.Map(weir.FromSlice(env, in), func(v int64) int64 { return 3*v + 1 }))
	for run := range 2 {
		var res <-chan []int64
		if run == 0 {
			res = readAll(c)
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond) // the reader waits first
		}
		j, err := env.ExecuteAsync(context.Background(), "collect")
		if err != nil {
			t.Fatal(err)
		}
		if run == 1 {
			res = readAll(c)
		}
		got := within(t, res, "a job that finished")
		if _, err := j.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: collected %d elements, want %d", run, len(got), len(want))
		}
	}
}

// All returns when the job could not start, and when it failed, instead of
// waiting for ever.
func TestCollectEndsWhenTheJobDoesNotRun(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	c := weir.Collect(weir.FromSlice(env, []int64{1, 2, 3}))
	res := readAll(c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := env.ExecuteAsync(ctx, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("ExecuteAsync with a canceled context: %v, want context.Canceled", err)
	}
	if got := within(t, res, "a job that never started"); len(got) != 0 {
		t.Fatalf("collected %v from a job that never started", got)
	}

	boom := errors.New("boom")
	env = weir.NewEnvironment(weir.Config{Parallelism: 2})
	failing := weir.Process(weir.FromSlice(env, []int64{1, 2, 3}), weir.ProcessFunc[int64, int64](func(_ weir.Context, v int64, out weir.Collector[int64]) error {
		if v == 2 {
			return boom
		}
		out.Collect(v)
		return nil
	}))
	res = readAll(weir.Collect(failing))
	j, err := env.ExecuteAsync(context.Background(), "fails")
	if err != nil {
		t.Fatal(err)
	}
	within(t, res, "a job that failed")
	if _, err := j.Wait(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Wait: %v, want the function's error", err)
	}
}

// twoCollects builds a job with two Collect sinks, each of more elements
// than 16 batches of 256, and
// returns the elements each must collect, sorted.
func twoCollects(t *testing.T, n int) (*weir.Environment, *weir.Collected[int64], *weir.Collected[int64], []int64, []int64) {
	rng := testseed.Rand(t, 1)
	in := make([]int64, n+rng.IntN(n))
	var wantA, wantB []int64
	for i := range in {
		in[i] = rng.Int64N(1 << 40)
		wantA = append(wantA, 2*in[i])
		wantB = append(wantB, 3*in[i])
	}
	slices.Sort(wantA)
	slices.Sort(wantB)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src := weir.FromSlice(env, in)
	a := weir.Collect(weir.Map(src, func(v int64) int64 { return 2 * v }))
	b := weir.Collect(weir.Map(src, func(v int64) int64 { return 3 * v }))
	return env, a, b, wantA, wantB
}

func checkSorted(t *testing.T, what string, got, want []int64) {
	t.Helper()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: collected %d elements, want %d (or they differ)", what, len(got), len(want))
	}
}

// Execute returns while nobody reads its Collect sinks, and they are read
// after it, one after the other: a sink must not block the job while its
// elements wait (16 batches and more), or Execute never returns.
func TestCollectTwoSinksReadAfterExecute(t *testing.T) {
	env, a, b, wantA, wantB := twoCollects(t, 20000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := env.Execute(ctx, "two collects"); res <- err }()
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Execute did not return within 30 s while its Collect sinks were unread")
	}
	checkSorted(t, "first sink", within(t, readAll(a), "the first sink"), wantA)
	checkSorted(t, "second sink", within(t, readAll(b), "the second sink"), wantB)
}

// A program reads one Collect sink to its end, then the other, while the
// job runs: the second sink holds its elements meanwhile.
func TestCollectTwoSinksReadInSequenceWhileRunning(t *testing.T) {
	env, a, b, wantA, wantB := twoCollects(t, 20000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := env.ExecuteAsync(ctx, "two collects")
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan [2][]int64, 1)
	go func() {
		var got [2][]int64
		for v := range a.All() {
			got[0] = append(got[0], v)
		}
		for v := range b.All() {
			got[1] = append(got[1], v)
		}
		res <- got
	}()
	var got [2][]int64
	select {
	case got = <-res:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("reading two Collect sinks one after the other did not end within 30 s")
	}
	if _, err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "first sink", got[0], wantA)
	checkSorted(t, "second sink", got[1], wantB)
}

// At its MaxUnread bound a sink nobody reads fails the job with an error
// that names the bound, rather than wait for a reader that reads another
// sink first.
func TestCollectFailsAtMaxUnreadWithoutReader(t *testing.T) {
	env, a, b, _, _ := twoCollects(t, 20000)
	b.MaxUnread(1000)
	j, err := env.ExecuteAsync(context.Background(), "bounded")
	if err != nil {
		t.Fatal(err)
	}
	within(t, readAll(a), "the first sink")
	_, err = j.Wait(context.Background())
	if err == nil || !strings.Contains(err.Error(), "MaxUnread") {
		t.Fatalf("Wait: %v, want an error naming MaxUnread", err)
	}
}

// While All reads a sink, the sink waits at its bound (backpressure)
// instead of failing: every element arrives through a bound of 100.
func TestCollectWaitsAtMaxUnreadForItsReader(t *testing.T) {
	env, a, b, wantA, wantB := twoCollects(t, 10000)
	a.MaxUnread(100)
	b.MaxUnread(100)
	resA, resB := readAll(a), readAll(b)
	j, err := env.ExecuteAsync(context.Background(), "backpressured")
	if err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "first sink", within(t, resA, "the first sink"), wantA)
	checkSorted(t, "second sink", within(t, resB, "the second sink"), wantB)
	if _, err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
