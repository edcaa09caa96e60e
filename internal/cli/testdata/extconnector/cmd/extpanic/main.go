// Command extpanic runs a job whose Map function calls a helper that writes
// to a nil map at the fifth number, logging at info level to stderr, and
// prints the job's error to stderr.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/weirhq/weir"
)

// count is the user's helper with the bug.
func count(seen map[int64]int, v int64) {
	seen[v]++ // the panic site
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, Logger: logger})
	var seen map[int64]int // never made
	weir.Discard(weir.Map(weir.Sequence(env, 1, 10), func(v int64) int64 {
		if v == 5 {
			count(seen, v) // the call
		}
		return v
	}).Name("Count"))
	if _, err := env.Execute(context.Background(), "extpanic"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
