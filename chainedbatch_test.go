package weir_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirhq/weir"
	"go.uber.org/goleak"
)

// A source's batches go through chained maps and filters as batches
// (operator.BatchInput); a sink that takes records one by one ends the
// batches. The output must be what the same functions give record by record.
func TestChainedBatchesKeepOrderAndValues(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	var s weir.DataStream[int64] = weir.Sequence(env, 0, 99_999)
	s = weir.Filter(weir.Map(s, func(v int64) int64 { return v * 3 }), func(v int64) bool { return v%2 == 0 })
	strs := weir.Map(s, func(v int64) string { return fmt.Sprint(v + 1) })
	strs = weir.Filter(strs, func(v string) bool { return !strings.HasSuffix(v, "7") })
	weir.Discard(strs) // a second, batch-taking consumer: the filter's output fans out
	got, err := weir.ExecuteAndCollect(context.Background(), env, strs, "chained-batches")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for v := int64(0); v <= 99_999; v++ {
		if w := v * 3; w%2 == 0 {
			if str := fmt.Sprint(w + 1); !strings.HasSuffix(str, "7") {
				want = append(want, str)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// A panic in a batched filter names the filter, and one in the map after it
// names that map.
func TestPanicInBatchedChainNamesOperator(t *testing.T) {
	for _, failing := range []string{"Check", "Tail"} {
		t.Run(failing, func(t *testing.T) {
			defer goleak.VerifyNone(t, ignoreSignalRouter)
			env := weir.NewEnvironment(weir.Config{Parallelism: 1})
			m := weir.Map(weir.Sequence(env, 0, 10_000), func(v int64) int64 { return v }).Name("Head")
			f := weir.Filter(m, func(v int64) bool {
				if failing == "Check" && v == 5_000 {
					panic("bad value in Check")
				}
				return v%3 != 0
			}).Name("Check")
			weir.Discard(weir.Map(f, func(v int64) int64 {
				if failing == "Tail" && v == 5_000 {
					panic("bad value in Tail")
				}
				return v
			}).Name("Tail"))
			_, err := env.Execute(context.Background(), "batched-panic")
			if err == nil || !strings.Contains(err.Error(), `operator "`+failing+`"`) || !strings.Contains(err.Error(), "bad value in "+failing) {
				t.Fatalf("want a failure of %s, got %v", failing, err)
			}
		})
	}
}
