package weir_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
	"go.uber.org/goleak"
)

// MapWithState's open runs once per subtask and the handles it declares
// serve only the function it returns: at parallelism 2 on the heap backend
// every key's running sum ends at the key's total (an independent sum).
func TestMapWithStateOpenPerSubtask(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src := weir.Sequence(env, 1, 400)
	keyed := weir.KeyBy(src, func(v int64) int64 { return v % 8 })
	var opens atomic.Int64
	type sum struct{ Key, Total int64 }
	out := run(t, env, weir.MapWithState(keyed, func(rc weir.KeyedRuntimeContext) (func(weir.KeyedContext[int64], int64) (sum, error), error) {
		opens.Add(1)
		s := state.GetValueState(rc.State(), state.ValueDescriptor[int64]{Name: "sum", Codec: codec.Int64()})
		return func(ctx weir.KeyedContext[int64], v int64) (sum, error) {
			total, _ := s.Value()
			total += v
			s.Update(total)
			return sum{ctx.CurrentKey(), total}, nil
		}, nil
	}))
	want := map[int64]int64{}
	for v := int64(1); v <= 400; v++ {
		want[v%8] += v
	}
	got := map[int64]int64{}
	for _, s := range out {
		got[s.Key] = max(got[s.Key], s.Total)
	}
	if len(out) != 400 || len(got) != len(want) {
		t.Fatalf("%d results for %d keys, want 400 for %d", len(out), len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %d: sum %d, want %d", k, got[k], w)
		}
	}
	if n := opens.Load(); n != 2 {
		t.Errorf("open ran %d times, want once per subtask (2)", n)
	}
}

func TestMapWithStateNilOpenFailsAtExecute(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	keyed := weir.KeyBy(weir.Sequence(env, 1, 3), func(v int64) int64 { return v })
	weir.Discard(weir.MapWithState[int64, int64, int64](keyed, nil))
	_, err := env.Execute(context.Background(), "nil-open")
	if err == nil || !strings.Contains(err.Error(), "MapWithState: open is nil") {
		t.Fatalf("got %v, want the nil open refused", err)
	}
}
