package weir_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"

	"github.com/weirhq/weir"
)

// Map turns each element into one element, possibly of another type. At
// parallelism 1 the elements keep their order.
func ExampleMap() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	words := weir.FromSlice(env, []string{"stream", "state", "time"})
	lengths := weir.Map(words, func(w string) int { return len(w) })
	out, err := weir.ExecuteAndCollect(context.Background(), env, lengths, "map")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [6 5 4]
}

// Filter keeps the elements for which the predicate is true.
func ExampleFilter() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	even := weir.Filter(weir.Sequence(env, 1, 10), func(v int64) bool { return v%2 == 0 })
	out, err := weir.ExecuteAndCollect(context.Background(), env, even, "filter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [2 4 6 8 10]
}

// FlatMap emits any number of elements per input element through a
// Collector.
func ExampleFlatMap() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	lines := weir.FromSlice(env, []string{"to be or", "not to be"})
	words := weir.FlatMap(lines, func(l string, out weir.Collector[string]) {
		for _, w := range strings.Fields(l) {
			out.Collect(w)
		}
	})
	out, err := weir.ExecuteAndCollect(context.Background(), env, words, "flatmap")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [to be or not to be]
}

// WordCount is the element of the KeyBy and Reduce example.
type WordCount struct {
	Word  string
	Count int
}

// KeyBy partitions a stream by key; Reduce then keeps a running result per
// key and emits it after every element. At parallelism 2 the keys are
// spread over two subtasks, so the output is sorted before printing.
func ExampleKeyBy() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	words := weir.FromSlice(env, []string{"to", "be", "or", "not", "to", "be"})
	pairs := weir.Map(words, func(w string) WordCount { return WordCount{w, 1} })
	byWord := weir.KeyBy(pairs, func(c WordCount) string { return c.Word })
	counts := weir.Reduce(byWord, func(acc, v WordCount) WordCount {
		acc.Count += v.Count
		return acc
	})
	out, err := weir.ExecuteAndCollect(context.Background(), env, counts, "wordcount")
	if err != nil {
		log.Fatal(err)
	}
	final := map[string]int{}
	for _, c := range out {
		final[c.Word] = max(final[c.Word], c.Count)
	}
	for _, w := range slices.Sorted(maps.Keys(final)) {
		fmt.Println(w, final[w])
	}
	// Output:
	// be 2
	// not 1
	// or 1
	// to 2
}

// Process runs a ProcessFunction: any number of outputs per element, the
// element's timestamp, and side outputs through an OutputTag.
func ExampleProcess() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	negative := weir.NewOutputTag[int64]("negative")
	checked := weir.Process(weir.FromSlice(env, []int64{3, -1, 4, -1, 5}),
		weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
			if v < 0 {
				negative.Output(ctx, v) // to the side output
				return nil
			}
			out.Collect(v)
			return nil
		}))
	main := weir.Collect(checked)
	side := weir.Collect(weir.SideOutput(checked, negative))
	if _, err := env.Execute(context.Background(), "process"); err != nil {
		log.Fatal(err)
	}
	// Collect sinks hold their elements until read, in any order.
	fmt.Println(slices.Collect(main.All()))
	fmt.Println(slices.Collect(side.All()))
	// Output:
	// [3 4 5]
	// [-1 -1]
}

// Union merges streams of one type.
func ExampleUnion() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	a := weir.FromSlice(env, []string{"a1", "a2"})
	b := weir.FromSlice(env, []string{"b1"})
	out, err := weir.ExecuteAndCollect(context.Background(), env, weir.Union(a, b), "union")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out) // the two inputs interleave in any order
	fmt.Println(out)
	// Output: [a1 a2 b1]
}

// Collect sinks of one job can be read one after the other, here after
// Execute returned: each holds what it collected (up to MaxUnread
// elements) until its reader comes.
func ExampleCollect() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	numbers := weir.Sequence(env, 1, 5)
	squares := weir.Collect(weir.Map(numbers, func(v int64) int64 { return v * v }))
	cubes := weir.Collect(weir.Map(numbers, func(v int64) int64 { return v * v * v }))
	if _, err := env.Execute(context.Background(), "collect"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(slices.Collect(squares.All()))
	fmt.Println(slices.Collect(cubes.All()))
	// Output:
	// [1 4 9 16 25]
	// [1 8 27 64 125]
}
