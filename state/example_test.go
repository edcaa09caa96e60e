package state_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// Visit is the element of the state examples: a user's visit to a page.
type Visit struct {
	User, Page string
	Seconds    int64
}

var visits = []Visit{
	{"ann", "/home", 3}, {"bob", "/home", 1}, {"ann", "/cart", 10},
	{"ann", "/home", 2}, {"bob", "/help", 30},
}

// run keys the visits by user, runs fn over them at parallelism 1 (so the
// output keeps the input's order) and prints what it emits.
func run(fn weir.KeyedProcessFunc[string, Visit, string]) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	byUser := weir.KeyBy(weir.FromSlice(env, visits), func(v Visit) string { return v.User })
	out, err := weir.ExecuteAndCollect(context.Background(), env, weir.ProcessKeyed(byUser, fn), "state")
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range out {
		fmt.Println(l)
	}
}

var longestDesc = state.ValueDescriptor[int64]{Name: "longest", Codec: codec.Int64()}

// A ValueState holds one value per key: here each user's longest visit.
// State handles always read and write the current key's value.
func ExampleValueState() {
	run(func(ctx weir.KeyedContext[string], v Visit, out weir.Collector[string]) error {
		longest := state.GetValueState(ctx.State(), longestDesc)
		if cur, ok := longest.Value(); !ok || v.Seconds > cur {
			longest.Update(v.Seconds)
			out.Collect(fmt.Sprintf("%s: longest visit now %ds", ctx.CurrentKey(), v.Seconds))
		}
		return nil
	})
	// Output:
	// ann: longest visit now 3s
	// bob: longest visit now 1s
	// ann: longest visit now 10s
	// bob: longest visit now 30s
}

var recentDesc = state.ListDescriptor[string]{Name: "recent", Codec: codec.String()}

// A ListState holds a list per key: here each user's last two pages.
func ExampleListState() {
	run(func(ctx weir.KeyedContext[string], v Visit, out weir.Collector[string]) error {
		recent := state.GetListState(ctx.State(), recentDesc)
		pages := append(recent.Get(), v.Page)
		if len(pages) > 2 {
			pages = pages[len(pages)-2:]
		}
		recent.Update(pages)
		out.Collect(fmt.Sprintf("%s: %v", ctx.CurrentKey(), pages))
		return nil
	})
	// Output:
	// ann: [/home]
	// bob: [/home]
	// ann: [/home /cart]
	// ann: [/cart /home]
	// bob: [/home /help]
}

var perPageDesc = state.MapDescriptor[string, int64]{Name: "per-page", UserKeyCodec: codec.String(), ValueCodec: codec.Int64()}

// A MapState holds a map per key: here each user's time per page. Reading
// or writing one entry does not decode the others.
func ExampleMapState() {
	run(func(ctx weir.KeyedContext[string], v Visit, out weir.Collector[string]) error {
		perPage := state.GetMapState(ctx.State(), perPageDesc)
		total, _ := perPage.Get(v.Page)
		perPage.Put(v.Page, total+v.Seconds)
		out.Collect(fmt.Sprintf("%s: %ds on %s", ctx.CurrentKey(), total+v.Seconds, v.Page))
		return nil
	})
	// Output:
	// ann: 3s on /home
	// bob: 1s on /home
	// ann: 10s on /cart
	// ann: 5s on /home
	// bob: 30s on /help
}

var totalDesc = state.ReducingDescriptor[int64]{
	Name:   "total",
	Codec:  codec.Int64(),
	Reduce: func(a, b int64) int64 { return a + b },
}

// A ReducingState folds every value added into one with the descriptor's
// Reduce: here each user's total time.
func ExampleReducingState() {
	run(func(ctx weir.KeyedContext[string], v Visit, out weir.Collector[string]) error {
		total := state.GetReducingState(ctx.State(), totalDesc)
		total.Add(v.Seconds)
		t, _ := total.Get()
		out.Collect(fmt.Sprintf("%s: %ds in all", ctx.CurrentKey(), t))
		return nil
	})
	// Output:
	// ann: 3s in all
	// bob: 1s in all
	// ann: 13s in all
	// ann: 15s in all
	// bob: 31s in all
}

// meanAcc is the accumulator of the AggregatingState example.
type meanAcc struct{ Sum, N int64 }

var meanDesc = state.AggregatingDescriptor[int64, meanAcc, float64]{
	Name:     "mean",
	AccCodec: codec.MustFor[meanAcc](),
	Create:   func() meanAcc { return meanAcc{} },
	Add:      func(seconds int64, acc meanAcc) meanAcc { return meanAcc{acc.Sum + seconds, acc.N + 1} },
	Result:   func(acc meanAcc) float64 { return float64(acc.Sum) / float64(acc.N) },
}

// An AggregatingState folds the values added into an accumulator of
// another type, and reads a result from it: here each user's mean visit.
func ExampleAggregatingState() {
	run(func(ctx weir.KeyedContext[string], v Visit, out weir.Collector[string]) error {
		mean := state.GetAggregatingState(ctx.State(), meanDesc)
		mean.Add(v.Seconds)
		m, _ := mean.Get()
		out.Collect(fmt.Sprintf("%s: %.1fs on average", ctx.CurrentKey(), m))
		return nil
	})
	// Output:
	// ann: 3.0s on average
	// bob: 1.0s on average
	// ann: 6.5s on average
	// ann: 5.0s on average
	// bob: 15.5s on average
}

// counter counts the elements its subtask has seen in operator list state:
// state of the subtask, not of a key, checkpointed with it and split
// among the subtasks when the job resumes at another parallelism.
type counter struct{ count state.ListState[int64] }

// Open reads the state back after a restore: the list then holds what the
// subtask (or, after rescaling, some other subtask) had at the checkpoint.
func (c *counter) Open(ctx weir.RuntimeContext) error {
	c.count = state.GetOperatorListState(ctx.OperatorState(), state.ListDescriptor[int64]{Name: "count", Codec: codec.Int64()})
	return nil
}

func (c *counter) ProcessElement(ctx weir.Context, v string, out weir.Collector[string]) error {
	var n int64
	for _, part := range c.count.Get() {
		n += part
	}
	c.count.Update([]int64{n + 1})
	out.Collect(fmt.Sprintf("%s is element %d", v, n+1))
	return nil
}

// Operator list state belongs to a subtask of a non-keyed function; get it
// from RuntimeContext.OperatorState, usually in Open.
func ExampleGetOperatorListState() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	counted := weir.Process(weir.FromSlice(env, []string{"a", "b", "c"}), &counter{})
	out, err := weir.ExecuteAndCollect(context.Background(), env, counted, "operator state")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [a is element 1 b is element 2 c is element 3]
}
