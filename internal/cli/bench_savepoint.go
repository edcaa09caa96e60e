package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/benchjobs"
)

// Bounds of weir bench savepoint's flags.
const (
	minBenchState = 1 << 20  // 1 MiB
	maxBenchState = 64 << 30 // 64 GiB
	maxValueBytes = 1 << 20
)

// benchSavepoint runs weir bench savepoint: load keyed state, take a
// savepoint, restore it at each --restore-parallelism and verify every key
// (internal/benchjobs/savepoint.go; docs/benchmarks.md "Savepoints").
func benchSavepoint(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bench savepoint")
	stateSize := &sizeFlag{bytes: 64 << 20}
	fs.Var(stateSize, "state", "")
	valueBytes := fs.Int("value-bytes", 256, "")
	backend := fs.String("state-backend", "hashmap", "")
	alias(fs, "backend", "state-backend") // its old name
	format := fs.String("format", "canonical", "")
	parallelism := fs.Int("parallelism", 2, "")
	restoreP := fs.String("restore-parallelism", "", "")
	dir := fs.String("dir", "", "")
	timeout := fs.Duration("timeout", 30*time.Minute, "")
	cpuprofile := fs.String("cpuprofile", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("bench savepoint takes no arguments besides its flags, got %q", pos)
	}
	switch {
	case stateSize.bytes < minBenchState || stateSize.bytes > maxBenchState:
		return usagef("--state must be between 1mb and 64gb (a size such as 64mb or 1gb), got %d bytes", stateSize.bytes)
	case *valueBytes < 8 || *valueBytes > maxValueBytes:
		return usagef("--value-bytes must be between 8 and %d, got %d", maxValueBytes, *valueBytes)
	case *backend != "hashmap" && *backend != "pebble":
		return usagef("--%s must be hashmap or pebble, got %q", typed(fs, "state-backend"), *backend)
	case *parallelism < 1 || *parallelism > 1024:
		return usagef("--parallelism of a benchmark must be between 1 and 1024, got %d", *parallelism)
	case *timeout <= 0:
		return usagef("--timeout must be positive, got %v", *timeout)
	}
	var native bool
	switch strings.ToLower(*format) {
	case "canonical":
	case "native":
		native = true
	default:
		return usagef("--format must be canonical or native, got %q", *format)
	}
	// Default: the same parallelism and another one.
	other := 1
	if *parallelism == 1 {
		other = 2
	}
	restore := []int{*parallelism, other}
	if *restoreP != "" {
		restore = restore[:0]
		for _, s := range strings.Split(*restoreP, ",") {
			p, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || p < 1 || p > 1024 {
				return usagef("--restore-parallelism must be a comma-separated list of parallelisms from 1 to 1024, got %q", *restoreP)
			}
			restore = append(restore, p)
		}
		if len(restore) > 8 {
			return usagef("--restore-parallelism lists at most 8 parallelisms, got %d", len(restore))
		}
	}
	work := *dir
	if work == "" {
		work = os.TempDir()
	}
	work, err = os.MkdirTemp(work, "weir-bench-savepoint-")
	if err != nil {
		return fmt.Errorf("bench savepoint: %w", err)
	}
	defer os.RemoveAll(work)
	fmt.Fprintf(stdout, "savepoint benchmark: %s state on %s, %s format, p=%d, restore at %v, working directory %s\n",
		stateSize, *backend, strings.ToLower(*format), *parallelism, restore, work)
	res, err := benchjobs.Savepoint(ctx, benchjobs.SavepointOptions{StateBytes: stateSize.bytes, ValueBytes: *valueBytes,
		Backend: *backend, Native: native, Parallelism: *parallelism, Restore: restore, Dir: work, Timeout: *timeout,
		CPUProfile: *cpuprofile, Progress: stdout})
	if err != nil {
		return fmt.Errorf("bench savepoint: %w", err)
	}
	mb := float64(res.StateBytes) / 1e6
	sp := res.Savepoint
	fmt.Fprintf(stdout, "load: %.2f s wall, %.2f s CPU; settled after %.2f s\n", res.Load.Wall.Seconds(), res.Load.CPU.Seconds(), res.Settle.Wall.Seconds())
	fmt.Fprintf(stdout, "savepoint: %d keys, %.1f MB logical state, %.1f MB in %d files (%s); %.2f s wall, %.2f s CPU; %.1f MB/s wall, %.1f MB per CPU second; copy into the folder %.0f%% of the end-to-end time\n",
		res.Keys, mb, float64(res.Bytes)/1e6, res.Files, strings.Join(res.KeyedKinds, "+"), sp.Wall.Seconds(), sp.CPU.Seconds(),
		mb/sp.Wall.Seconds(), mb/sp.CPU.Seconds(), 100*float64(res.EndToEnd-res.Acked)/float64(max(res.EndToEnd, time.Millisecond)))
	for _, r := range res.Restores {
		fmt.Fprintf(stdout, "restore at p=%d: running after %.2f s wall, %.2f s CPU; %d of %d keys verified (%.2f s wall, %.2f s CPU)\n",
			r.Parallelism, r.Running.Wall.Seconds(), r.Running.CPU.Seconds(), r.Verified, res.Keys, r.Verify.Wall.Seconds(), r.Verify.CPU.Seconds())
	}
	return nil
}
