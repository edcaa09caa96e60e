// Command exttrigger runs a keyed global window with extconnector's
// trigger and evictor over the numbers 1..n (keyed by n mod 3) and prints,
// per firing, the key and the sum of the even numbers the window held.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"example.com/extconnector"
	"github.com/weirhq/weir"
)

func main() {
	n, _ := strconv.ParseInt(os.Args[1], 10, 64)
	env := weir.NewEnvironment(weir.Config{Parallelism: 3})
	ws := weir.Window(weir.KeyBy(weir.Sequence(env, 1, n).SetParallelism(1), func(v int64) int64 { return v % 3 }), weir.GlobalWindows{}).
		Trigger(&extconnector.MarkerTrigger[int64]{Marker: func(v int64) bool { return v%10 == 0 }, Max: 4}).
		Evictor(extconnector.KeepEvictor[int64]{Keep: func(v int64) bool { return v%2 == 0 }})
	sums := weir.WindowReduceProcess(ws, func(a, b int64) int64 { return a + b },
		weir.ProcessWindowFunc[int64, int64, string](func(ctx weir.WindowContext[int64], s []int64, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("k%d sum=%d", ctx.CurrentKey(), s[0]))
			return nil
		}))
	c := weir.Collect(sums)
	job, err := env.ExecuteAsync(context.Background(), "exttrigger")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for line := range c.All() {
		fmt.Println(line)
	}
	if _, err := job.Wait(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
