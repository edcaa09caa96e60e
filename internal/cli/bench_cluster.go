package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/benchjobs"
)

// Benchmarks on a multi-process cluster (issue 36's throughput and latency
// benchmarks; scripts/bench-cluster): `weir bench shuffle --jobmanager ADDR`
// and `weir bench latency --jobmanager ADDR` submit their job as program
// "bench shuffle" or "bench latency" with the flags below, and every
// process of the cluster runs benchProgram with them (program, cluster.go):
// the JobManager under launch.OnCluster (Execute submits and waits), each
// TaskManager under launch.Building (the graph only). A cluster runs a
// streaming job only with a checkpoint directory every process shares, so
// the client makes one per submission (under --dir) and removes it after;
// the job checkpoints only at its end (interval 0).

// benchProgramPrefix starts the program names of benchmark jobs.
const benchProgramPrefix = "bench "

// benchProgram builds and runs benchmark name's job from the flags the
// client sent (submitBench).
func benchProgram(ctx context.Context, name string, args []string) error {
	fs := newFlagSet(benchProgramPrefix + name)
	parallelism := fs.Int("parallelism", 2, "")
	cpDir := fs.String("checkpoint-dir", "", "")
	events := fs.Int64("events", 0, "")
	keys := fs.Int64("keys", 0, "")
	rate := fs.Float64("rate", 0, "")
	warmup := fs.Duration("warmup", 0, "")
	duration := fs.Duration("duration", 0, "")
	bufferTimeout := fs.Duration("buffer-timeout", 0, "")
	statsDir := fs.String("stats-dir", "", "")
	pos, err := parseArgs(fs, args)
	switch {
	case err != nil:
		return err
	case len(pos) != 0:
		return usagef("%s%s takes no arguments, got %q", benchProgramPrefix, name, pos)
	case *cpDir == "":
		return usagef("%s%s needs --checkpoint-dir (a folder every process of the cluster sees)", benchProgramPrefix, name)
	}
	cp := &weir.CheckpointConfig{Dir: *cpDir} // interval 0: a checkpoint at the end only
	switch name {
	case "shuffle":
		_, err := benchjobs.Shuffle(ctx, *events, weir.Config{Parallelism: *parallelism, Checkpointing: cp})
		return err
	case "latency":
		_, err := benchjobs.KeyedLatency(ctx, benchjobs.LatencyOptions{Keys: *keys, Parallelism: *parallelism, Rate: *rate,
			Warmup: *warmup, Duration: *duration, BufferTimeout: *bufferTimeout, StatsDir: *statsDir, Checkpointing: cp}, nil)
		return err
	}
	return usagef("unknown benchmark %q for a cluster (shuffle, latency)", name)
}

// submitBench submits benchmark name's job with args to the JobManager at
// addr and waits for its end. It makes a folder under parent (the client's
// --dir; "" for the temporary directory) for the job's checkpoints, passes
// it with args, and removes it after; with stats, also a folder for the
// subtasks' results, which read is called with before the removal.
func submitBench(ctx context.Context, addr, parent, name string, args []string, stats bool, read func(statsDir string) error, stderr io.Writer) error {
	d, err := os.MkdirTemp(parent, "weir-bench-"+name+"-")
	if err != nil {
		return fmt.Errorf("bench %s: a folder for the job (--dir): %w", name, err)
	}
	defer os.RemoveAll(d)
	if d, err = filepath.Abs(d); err != nil {
		return err
	}
	args = append(args, "--checkpoint-dir="+filepath.Join(d, "checkpoints"))
	statsDir := filepath.Join(d, "stats")
	if stats {
		if err := os.Mkdir(statsDir, 0o755); err != nil {
			return err
		}
		args = append(args, "--stats-dir="+statsDir)
	}
	if err := submit(ctx, addr, benchProgramPrefix+name, args, false, stderr); err != nil {
		return err
	}
	if read != nil {
		return read(statsDir)
	}
	return nil
}

// benchShuffleOnCluster is `weir bench shuffle --jobmanager ADDR`: the
// shuffle job at parallelism p on the cluster. It reports the events and
// the wall time from submission to the job's end; the job's CPU is spent
// in the cluster's processes, which scripts/bench-cluster measures.
func benchShuffleOnCluster(ctx context.Context, addr, dir string, events int64, p int, stdout, stderr io.Writer) error {
	start := time.Now()
	err := submitBench(ctx, addr, dir, "shuffle", []string{fmt.Sprintf("--events=%d", events), fmt.Sprintf("--parallelism=%d", p)}, false, nil, stderr)
	wall := time.Since(start)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "shuffle on the cluster at %s: %d events in %v wall (submission to end): %.2f million/s wall; "+
		"the CPU is the JobManager's and TaskManagers' (scripts/bench-cluster sums it)\n",
		addr, events, wall.Round(time.Millisecond), float64(events)/wall.Seconds()/1e6)
	return nil
}

// latencyOnCluster runs one latency job of o on the cluster at addr and
// returns what its subtasks wrote (benchjobs.ReadLatencyStats).
func latencyOnCluster(ctx context.Context, addr, dir string, o benchjobs.LatencyOptions, stderr io.Writer) (benchjobs.LatencyResult, error) {
	args := []string{fmt.Sprintf("--keys=%d", o.Keys), fmt.Sprintf("--parallelism=%d", o.Parallelism), fmt.Sprintf("--rate=%v", o.Rate),
		"--warmup=" + o.Warmup.String(), "--duration=" + o.Duration.String(), "--buffer-timeout=" + o.BufferTimeout.String()}
	var res benchjobs.LatencyResult
	start := time.Now()
	err := submitBench(ctx, addr, dir, "latency", args, true, func(statsDir string) error {
		o.StatsDir = statsDir
		var err error
		res, err = benchjobs.ReadLatencyStats(o)
		return err
	}, stderr)
	res.Wall = time.Since(start)
	return res, err
}

// isBenchProgram tells whether a submitted program is a benchmark's job,
// and which.
func isBenchProgram(job string) (string, bool) { return strings.CutPrefix(job, benchProgramPrefix) }
