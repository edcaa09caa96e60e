package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// bench runs one engine benchmark and reports events per second per core of
// process CPU time, the same figure `go test -bench` reports.
func bench(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	events := fs.Int64("events", 50_000_000, "")
	parallelism := fs.Int("parallelism", 2, "")
	sizeMB := fs.Int("size-mb", 100, "")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"bench needs one benchmark name: chained, shuffle or wordcount"}
	}
	ctx := context.Background()
	var run func() (int64, error)
	switch pos[0] {
	case "chained":
		run = func() (int64, error) { return benchjobs.ChainedMapFilter(ctx, *events) }
	case "shuffle":
		run = func() (int64, error) { return benchjobs.ShuffleInt64Pairs(ctx, *events, *parallelism) }
	case "wordcount":
		in, words, err := benchjobs.WordcountInput(os.TempDir(), *sizeMB<<20)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "weir-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		run = func() (int64, error) {
			return benchjobs.Wordcount(ctx, in, filepath.Join(dir, "counts.txt"), words, *parallelism)
		}
	default:
		return usageError{fmt.Sprintf("unknown benchmark %q (chained, shuffle, wordcount)", pos[0])}
	}
	start := cpumeter.Now()
	n, err := run()
	if err != nil {
		return err
	}
	cpu, wall := cpumeter.Now().Since(start)
	fmt.Fprintf(stdout, "%s: %d events in %v wall, %v CPU (%.2f cores): %.2f million events/s per core, %.2f million/s wall\n",
		pos[0], n, wall.Round(1e6), cpu.Round(1e6), cpu.Seconds()/wall.Seconds(),
		float64(n)/cpu.Seconds()/1e6, float64(n)/wall.Seconds()/1e6)
	return nil
}
