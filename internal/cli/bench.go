package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// bench runs one engine benchmark and reports events per second per core of
// process CPU time, the same figure `go test -bench` reports.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "savepoint" {
		return benchSavepoint(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "kafka" {
		return benchKafka(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "latency" {
		return benchLatency(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("bench")
	events := fs.Int64("events", 50_000_000, "")
	parallelism := fs.Int("parallelism", 2, "")
	sizeMB := fs.Int("size-mb", 100, "")
	cpuprofile := fs.String("cpuprofile", "", "")
	jobManager := fs.String("jobmanager", "", "")
	dir := fs.String("dir", "", "")
	jobFlags := addBenchJobFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("bench needs one benchmark name: chained, shuffle, wordcount, keyed, window, intervaljoin, savepoint, kafka or latency")
	}
	switch pos[0] {
	case "chained":
		err = onlyFlags(fs, "bench chained", "events", "cpuprofile")
	case "shuffle":
		err = onlyFlags(fs, "bench shuffle", "events", "parallelism", "cpuprofile", "jobmanager", "dir")
	case "wordcount":
		err = onlyFlags(fs, "bench wordcount", "size-mb", "parallelism", "cpuprofile")
	case "keyed", "window", "intervaljoin":
		err = benchJobCheck(fs, pos[0], jobFlags)
	default:
		return usagef("unknown benchmark %q (chained, shuffle, wordcount, keyed, window, intervaljoin, savepoint, kafka, latency)", pos[0])
	}
	switch {
	case err != nil:
		return err
	case *events < 1:
		return usagef("--events must be at least 1, got %d", *events)
	case *parallelism < 1 || *parallelism > 1024:
		return usagef("--parallelism of a benchmark must be between 1 and 1024, got %d", *parallelism)
	case *sizeMB < 1 || *sizeMB > 100_000:
		return usagef("--size-mb must be between 1 and 100000, got %d", *sizeMB)
	case *jobManager == "" && setFlag(fs, "dir"):
		return usagef("--dir needs --jobmanager (it is where a job on a cluster keeps its checkpoints)")
	case *jobManager != "" && *cpuprofile != "":
		return usagef("--cpuprofile profiles this process, and with --jobmanager the job runs in the cluster's: give weir taskmanager --cpuprofile")
	case *jobManager != "":
		return benchShuffleOnCluster(ctx, *jobManager, *dir, *events, *parallelism, stdout, stderr) // bench_cluster.go
	}
	var run func() (int64, error)
	switch pos[0] {
	case "keyed", "window", "intervaljoin":
		run = benchJobRun(ctx, pos[0], jobFlags, *events, *parallelism)
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
	}
	// The run only: the wordcount input above is written before.
	stopProfile, err := startCPUProfile("bench "+pos[0], *cpuprofile)
	if err != nil {
		return err
	}
	start := cpumeter.Now()
	n, err := run()
	cpu, wall := cpumeter.Now().Since(start)
	stopProfile()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d events in %v wall, %v CPU (%.2f cores): %.2f million events/s per core, %.2f million/s wall\n",
		pos[0], n, wall.Round(1e6), cpu.Round(1e6), cpu.Seconds()/wall.Seconds(),
		float64(n)/cpu.Seconds()/1e6, float64(n)/wall.Seconds()/1e6)
	return nil
}
