package weir_test

import (
	"context"
	"errors"
	"slices"
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
