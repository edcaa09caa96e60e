package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// benchLatency is `weir bench latency`: event-to-sink latency of the keyed
// job (benchjobs.KeyedLatency) at half of its maximum throughput, with the
// default buffer timeout and low ones, and the maximum throughput of each
// setting (what a low timeout costs). With --jobmanager each run is a job
// on that cluster (bench_cluster.go): its subtasks write their results to
// files the client reads, the latency is also split into the records that
// crossed processes and those that did not, and the CPU columns are left
// out (the CPU is the cluster processes'; scripts/bench-cluster sums it).
func benchLatency(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench latency")
	keys := fs.Int64("keys", 10_000, "")
	parallelism := fs.Int("parallelism", 2, "")
	duration := fs.Duration("duration", 10*time.Second, "")
	warmup := fs.Duration("warmup", time.Second, "")
	rate := fs.Float64("rate", 0, "")
	bufferTimeout := fs.Duration("buffer-timeout", 0, "")
	jobManager := fs.String("jobmanager", "", "")
	dir := fs.String("dir", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	for _, n := range setFlags(fs) {
		given[n] = true
	}
	switch {
	case len(pos) > 0:
		return usagef("bench latency takes no arguments, got %q", pos[0])
	case *keys < 1 || *keys > 1_000_000_000:
		return usagef("--keys must be between 1 and 1000000000, got %d", *keys)
	case *parallelism < 1 || *parallelism > 1024:
		return usagef("--parallelism of a benchmark must be between 1 and 1024, got %d", *parallelism)
	case *duration < 100*time.Millisecond || *duration > 24*time.Hour:
		return usagef("--duration must be between 100ms and 24h, got %v", *duration)
	case *warmup < 0 || *warmup > time.Hour:
		return usagef("--warmup must be between 0 and 1h, got %v", *warmup)
	case given["rate"] && (math.IsNaN(*rate) || *rate < 1 || *rate > 1e10):
		return usagef("--rate must be between 1 and 1e10 records per second, got %v", *rate)
	case *bufferTimeout < 0:
		return usagef("--buffer-timeout must not be negative, got %v (0 sends after every batch)", *bufferTimeout)
	case *jobManager == "" && given["dir"]:
		return usagef("--dir needs --jobmanager (it is where a job on a cluster keeps its checkpoints and results)")
	case *jobManager != "" && *keys%int64(*parallelism) != 0:
		return usagef("--keys %d must be a multiple of --parallelism %d with --jobmanager: a sink tells the records that crossed processes by their key", *keys, *parallelism)
	}
	cluster := *jobManager != ""
	type setting struct {
		name string
		bt   time.Duration // weir.Config's: 1ns sends after every batch
	}
	settings := []setting{{"100ms (default)", 100 * time.Millisecond}, {"1ms", time.Millisecond}, {"0 (every batch)", time.Nanosecond}}
	if given["buffer-timeout"] {
		bt := *bufferTimeout
		name := bt.String()
		if bt == 0 {
			bt, name = time.Nanosecond, "0 (every batch)" // as weir run: Config's 0 is the default
		}
		settings = []setting{{name, bt}}
	}
	cpuNow := func() time.Duration { return cpumeter.Now().CPU() }
	runJob := func(o benchjobs.LatencyOptions) (benchjobs.LatencyResult, error) {
		if cluster {
			return latencyOnCluster(ctx, *jobManager, *dir, o, stderr) // bench_cluster.go
		}
		return benchjobs.KeyedLatency(ctx, o, cpuNow)
	}
	opts := benchjobs.LatencyOptions{Keys: *keys, Parallelism: *parallelism, Warmup: *warmup}
	fmt.Fprintf(stdout, "keyed job: generator -> keyBy(i mod %d) -> count in ValueState -> latency sink, p=%d, heap state\n", *keys, *parallelism)
	if cluster {
		fmt.Fprintf(stdout, "on the cluster at %s: stamps by the wall clock (one host); \"across\" are the records whose source subtask ran in another process than their sink's (the TCP data plane), \"within\" the others; CPU: see the cluster's processes\n", *jobManager)
	}
	fmt.Fprintf(stdout, "latency: from the instant the source's schedule made a record due (so stalls count) to its arrival at the sink; the first %v discarded\n", *warmup)

	// The maximum throughput of each setting, unless a rate was given.
	maxRate := make([]float64, len(settings))
	if !given["rate"] {
		o := opts
		o.Duration = min(*duration, 3*time.Second)
		fmt.Fprintf(stdout, "\nmaximum throughput (unpaced, %v after %v of warm-up):\n", o.Duration, o.Warmup)
		if cluster {
			fmt.Fprintf(stdout, "| buffer timeout | events/s wall |\n|---|---|\n")
		} else {
			fmt.Fprintf(stdout, "| buffer timeout | events/s wall | events/s per core | cores | vs default |\n|---|---|---|---|---|\n")
		}
		var perCore0 float64
		for i, s := range settings {
			o.BufferTimeout = s.bt
			res, err := runJob(o)
			if err != nil {
				return err
			}
			if res.Window <= 0 || res.Events == 0 {
				return fmt.Errorf("bench latency: the maximum throughput run measured nothing (%d events)", res.Events)
			}
			maxRate[i] = float64(res.Events) / res.Window.Seconds()
			if cluster {
				fmt.Fprintf(stdout, "| %s | %.2f M |\n", s.name, maxRate[i]/1e6)
				continue
			}
			perCore := float64(res.TotalEvents) / res.CPU.Seconds()
			if i == 0 {
				perCore0 = perCore
			}
			fmt.Fprintf(stdout, "| %s | %.2f M | %.2f M | %.2f | %+.0f%% |\n", s.name, maxRate[i]/1e6, perCore/1e6,
				res.CPU.Seconds()/res.Wall.Seconds(), (perCore/perCore0-1)*100)
		}
		*rate = maxRate[0] / 2
	}
	what := "half of the maximum throughput with the first setting"
	if given["rate"] {
		what = "--rate"
	}
	fmt.Fprintf(stdout, "\nlatency at %.2f M events/s (%s), %v measured:\n", *rate/1e6, what, *duration)
	if cluster {
		fmt.Fprintf(stdout, "| buffer timeout | rate achieved | p50 | p99 | p99.9 | max | p99 across processes (records) | p99 within a process (records) | source behind schedule, max | source oversleep p99 / max | source busy gap p99 / max |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(stdout, "| buffer timeout | rate achieved | p50 | p99 | p99.9 | max | cores | events/s per core | source behind schedule, max | source oversleep p99 / max | source busy gap p99 / max |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, s := range settings {
		o := opts
		o.Duration, o.Rate, o.BufferTimeout = *duration, *rate, s.bt
		res, err := runJob(o)
		if err != nil {
			return err
		}
		h := res.Latency
		achieved := 0.0
		if res.Window > 0 {
			achieved = float64(res.Events) / res.Window.Seconds()
		}
		middle := fmt.Sprintf("%.2f | %.2f M", res.CPU.Seconds()/res.Wall.Seconds(), float64(res.TotalEvents)/res.CPU.Seconds()/1e6)
		if cluster {
			middle = fmt.Sprintf("%s (%d) | %s (%d)", ms(res.Remote.Quantile(0.99)), res.Remote.Count(), ms(res.Local.Quantile(0.99)), res.Local.Count())
		}
		fmt.Fprintf(stdout, "| %s | %.2f M/s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", s.name, achieved/1e6,
			ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()), middle, ms(res.SourceLag),
			ms(res.Oversleep.Quantile(0.99)), ms(res.Oversleep.Max()), ms(res.BusyGap.Quantile(0.99)), ms(res.BusyGap.Max()))
	}
	return nil
}

// ms formats nanoseconds as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }
