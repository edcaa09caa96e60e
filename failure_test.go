package weir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/failure"
	"go.uber.org/goleak"
)

func TestUserPanicFailsJobNamingOperatorAndSubtask(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	nums := weir.Sequence(env, 0, 1_000_000)
	// The shuffle puts the failing Map in its own task downstream.
	exploded := weir.Map(nums.Rebalance(), func(v int64) int64 {
		if v == 777_777 {
			var m map[string]int
			m["boom"] = 1 // a real runtime panic, not an explicit one
		}
		return v
	}).Name("Explode")
	weir.Discard(weir.Map(exploded, func(v int64) int64 { return v + 1 }).Name("After"))
	_, err := env.Execute(context.Background(), "panic")
	if err == nil {
		t.Fatal("the job succeeded; want a failure")
	}
	msg := err.Error()
	if !strings.Contains(msg, `operator "Explode"`) || !regexpSubtask.MatchString(msg) || !strings.Contains(msg, "assignment to entry in nil map") {
		t.Fatalf("error does not name the operator, subtask and cause: %v", err)
	}
}

func TestProcessErrorFailsJob(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 3})
	bad := errors.New("account 42 is not valid")
	out := weir.Process(weir.Sequence(env, 1, 100), weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
		if v == 42 {
			return bad
		}
		out.Collect(v)
		return nil
	})).Name("Validate")
	weir.Discard(out)
	_, err := env.Execute(context.Background(), "process-error")
	if !errors.Is(err, bad) {
		t.Fatalf("error %v does not wrap the function's error", err)
	}
	if !strings.Contains(err.Error(), `operator "Validate"`) || !strings.Contains(err.Error(), "/3)") {
		t.Fatalf("error does not name the operator and subtask: %v", err)
	}
}

func TestPanicInChainedOperatorNamesIt(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	a := weir.Map(weir.Sequence(env, 1, 10), func(v int64) int64 { return v }).Name("First")
	b := weir.FlatMap(a, func(v int64, out weir.Collector[int64]) {
		out.Collect(v)
		if v == 5 {
			panic(fmt.Sprintf("bad value %d", v)) // after emitting: must still name FlatMap
		}
	}).Name("Second")
	weir.Discard(weir.Map(b, func(v int64) int64 { return v }).Name("Third"))
	_, err := env.Execute(context.Background(), "chained")
	if err == nil || !strings.Contains(err.Error(), `operator "Second"`) || !strings.Contains(err.Error(), "bad value 5") {
		t.Fatalf("want a failure of Second, got %v", err)
	}
}

func TestMissingInputFileFailsSource(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	missing := filepath.Join(t.TempDir(), "nope.txt")
	weir.Discard(weir.ReadTextFile(env, missing))
	_, err := env.Execute(context.Background(), "missing")
	if err == nil || !strings.Contains(err.Error(), "nope.txt") || !strings.Contains(err.Error(), "Source: ") {
		t.Fatalf("want an error naming the source and file, got %v", err)
	}
}

func TestTypeWithoutCodecFailsAtNetworkEdge(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	type withFunc struct{ F func() }
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	var ran atomic.Bool
	s := weir.Map(weir.Sequence(env, 1, 10), func(int64) withFunc { ran.Store(true); return withFunc{} }).Name("MakeFunc")
	weir.Discard(s.Rebalance())
	_, err := env.Execute(context.Background(), "codec")
	if err == nil || !strings.Contains(err.Error(), "MakeFunc") || !strings.Contains(err.Error(), "codec") {
		t.Fatalf("want a codec error naming the operator, got %v", err)
	}
	if ran.Load() || !failure.IsPermanent(err) {
		t.Fatalf("the job ran (%t) or the error is not permanent (%v): the type must be refused at Execute, before any task", ran.Load(), err)
	}
	// Chained, the same type never needs a codec.
	env = weir.NewEnvironment(weir.Config{Parallelism: 2})
	s = weir.Map(weir.Sequence(env, 1, 10), func(int64) withFunc { return withFunc{} })
	weir.Discard(s)
	if _, err := env.Execute(context.Background(), "chained-nocodec"); err != nil {
		t.Fatal(err)
	}
}

func TestCancelByContext(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	weir.Discard(weir.Map(weir.Generate(env, -1, 0, func(i int64) int64 { return i }).Rebalance(), func(v int64) int64 { return v }))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := env.Execute(ctx, "endless")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestNoSink(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{})
	weir.Sequence(env, 1, 2)
	if _, err := env.Execute(context.Background(), "nosink"); err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Fatalf("got %v", err)
	}
}

func TestForwardParallelismMismatch(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	weir.Discard(weir.Map(weir.Sequence(env, 1, 2).Forward(), func(v int64) int64 { return v }).SetParallelism(3))
	if _, err := env.Execute(context.Background(), "fwd"); err == nil || !strings.Contains(err.Error(), "forward partitioning") {
		t.Fatalf("got %v", err)
	}
}

func TestFileSinkLeavesNothingOnFailure(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	s := weir.Map(weir.Sequence(env, 1, 100_000), func(v int64) int64 {
		if v == 90_000 {
			panic("late failure")
		}
		return v
	})
	weir.WriteText(s, out, nil)
	if _, err := env.Execute(context.Background(), "sinkfail"); err == nil {
		t.Fatal("want a failure")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}
