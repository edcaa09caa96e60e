package cli

import (
	"context"
	"flag"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/benchjobs"
)

// The benchmarks of the side-by-side comparison with Flink
// (scripts/bench-flink) that share the flags --keys and --state-backend:
// keyed (rows d and e), window (a 10 s tumbling event-time window count)
// and intervaljoin. bench.go parses the
// common flags and hands these names to benchJobCheck and benchJobRun.

// benchJobFlags are the flags only these benchmarks take.
type benchJobFlags struct {
	keys    *int64
	backend *string
}

// --state-backend is weir run's name; --backend, its old name here, is an
// alias.
func addBenchJobFlags(fs *flag.FlagSet) benchJobFlags {
	f := benchJobFlags{
		keys:    fs.Int64("keys", 0, ""),
		backend: fs.String("state-backend", "hashmap", ""),
	}
	alias(fs, "backend", "state-backend")
	return f
}

// isBenchJob tells whether name is one of these benchmarks.
func isBenchJob(name string) bool {
	switch name {
	case "keyed", "window", "intervaljoin":
		return true
	}
	return false
}

// benchJobCheck validates the flags of benchmark name.
func benchJobCheck(fs *flag.FlagSet, name string, f benchJobFlags) error {
	if err := onlyFlags(fs, "bench "+name, "events", "parallelism", "keys", "state-backend", "cpuprofile"); err != nil {
		return err
	}
	if !setFlag(fs, "keys") { // an explicit --keys 0 is an error below
		*f.keys = 100_000
		if name == "keyed" {
			*f.keys = 10_000
		}
	}
	switch {
	case *f.keys < 1 || *f.keys > 1_000_000_000:
		return usagef("--keys must be between 1 and 1000000000, got %d", *f.keys)
	case *f.backend != "hashmap" && *f.backend != "pebble":
		return usagef("--%s %q: want hashmap or pebble", typed(fs, "state-backend"), *f.backend)
	}
	return nil
}

// benchJobRun returns the run of benchmark name with n events (for
// intervaljoin: n records per side, 2n events).
func benchJobRun(ctx context.Context, name string, f benchJobFlags, n int64, parallelism int) func() (int64, error) {
	keys, backend := *f.keys, *f.backend
	switch name {
	case "keyed":
		return func() (int64, error) {
			return benchjobs.KeyedCountKeys(ctx, n, keys, parallelism, backend, 0, "")
		}
	case "window":
		return func() (int64, error) {
			return benchjobs.WindowCount(ctx, n, keys, parallelism, backend, weir.TumblingEventTimeWindows(10*time.Second))
		}
	default: // intervaljoin
		return func() (int64, error) {
			return benchjobs.IntervalJoin(ctx, n, keys, parallelism, backend)
		}
	}
}
