package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

// nexmarkCommand is `weir nexmark <subcommand>`: the Nexmark benchmark's
// tools (docs/nexmark.md).
func nexmarkCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("nexmark needs a command: generate or run")
	}
	switch args[0] {
	case "generate":
		return nexmarkGenerate(ctx, args[1:], stdout)
	case "run":
		return nexmarkRun(ctx, args[1:], stdout)
	case "help", "-h", "--help", "-help":
		return errHelp
	}
	return usagef("unknown nexmark command %q (there are: generate, run)", args[0])
}

// uint64Flag is a flag holding an unsigned 64-bit number (seeds), with a
// message that says what is wrong.
type uint64Flag struct{ v uint64 }

func (f *uint64Flag) String() string { return strconv.FormatUint(f.v, 10) }

func (f *uint64Flag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a number from 0 to %d", uint64(math.MaxUint64))
	}
	f.v = v
	return nil
}

// nexmarkGenerate writes the events of Nexmark's generator as JSON lines.
func nexmarkGenerate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("nexmark generate")
	events := fs.Int64("events", 0, "")
	tps := fs.Int64("tps", nexmark.DefaultEventsPerSecond, "")
	var seed uint64Flag
	fs.Var(&seed, "seed", "")
	baseTime := fs.Int64("base-time", nexmark.DefaultBaseTime, "")
	output := fs.String("output", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usagef("nexmark generate takes no arguments, got %q", pos)
	case *events <= 0:
		return usagef("--events must be a positive number of events, got %d", *events)
	case *tps <= 0:
		return usagef("--tps must be a positive number of events per second of event time, got %d", *tps)
	case *output == "":
		return usagef("nexmark generate needs --output FILE (- for standard output)")
	}
	cfg := nexmark.DefaultConfig()
	cfg.Events, cfg.EventsPerSecond, cfg.Seed, cfg.BaseTime = *events, *tps, seed.v, *baseTime
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	var w io.Writer = stdout
	var f *os.File
	if *output != "-" {
		if f, err = os.Create(*output); err != nil {
			return fmt.Errorf("nexmark generate: %w", err)
		}
		defer f.Close() // a second Close after the checked one is harmless
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var e nexmark.Event
	var line []byte
	var written int64
	for n := int64(0); n < cfg.Events; n++ {
		if n%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		g.Event(n, &e)
		line = nexmark.AppendJSON(line[:0], &e)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("nexmark generate: writing %s: %w", *output, err)
		}
		written += int64(len(line))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nexmark generate: writing %s: %w", *output, err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("nexmark generate: closing %s: %w", *output, err)
		}
		fmt.Fprintf(stdout, "wrote %d events (%d bytes) to %s\n", cfg.Events, written, *output)
	}
	return nil
}

// nexmarkRun runs Nexmark queries on the embedded cluster and prints what
// each cost as a JSON line (and, for several, a table).
func nexmarkRun(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("nexmark run")
	name := fs.String("query", "", "")
	events := fs.Int64("events", 0, "")
	tps := fs.Int64("tps", nexmark.DefaultEventsPerSecond, "")
	var seed uint64Flag
	fs.Var(&seed, "seed", "")
	parallelism := fs.Int("parallelism", 1, "")
	interval := fs.Duration("checkpoint-interval", 0, "")
	checkpointDir := fs.String("checkpoint-dir", "", "")
	backend := fs.String("state-backend", "hashmap", "")
	stateDir := fs.String("state-dir", "", "")
	input := fs.String("input", "", "")
	output := fs.String("output", "", "")
	// As weir run's: the job's network memory error names them.
	var networkMemory, bufferSize, heapMemory sizeFlag
	fs.Var(&networkMemory, "network-memory", "")
	fs.Var(&bufferSize, "buffer-size", "")
	fs.Var(&heapMemory, "heap-state-memory", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	for _, n := range setFlags(fs) {
		given[n] = true
	}
	switch {
	case len(pos) != 0:
		return usagef("nexmark run takes no arguments, got %q", pos)
	case given["network-memory"] && networkMemory.bytes < 1<<20:
		return usagef("--network-memory must be at least 1mb, got %d bytes", networkMemory.bytes)
	case given["heap-state-memory"] && heapMemory.bytes < 1<<20:
		return usagef("--heap-state-memory must be at least 1mb, got %d bytes", heapMemory.bytes)
	case given["buffer-size"] && (bufferSize.bytes < 1<<10 || bufferSize.bytes > 64<<20):
		return usagef("--buffer-size must be between 1kb and 64mb, got %d bytes", bufferSize.bytes)
	case *name == "":
		return usagef("nexmark run needs --query qN or --query all (there are: %s)", strings.Join(query.Names(), ", "))
	case *events < 0 || (*events == 0 && *input == ""):
		return usagef("--events must be a positive number of events, got %d (0 only with --input: the whole file)", *events)
	case *tps <= 0:
		return usagef("--tps must be a positive number of events per second of event time, got %d", *tps)
	case *parallelism < 1 || *parallelism > maxParallelism:
		return usagef("--parallelism must be from 1 to %d, got %d", maxParallelism, *parallelism)
	case *interval < 0:
		return usagef("--checkpoint-interval must not be negative, got %v", *interval)
	case *interval > 0 && *interval < 10*time.Millisecond:
		return usagef("--checkpoint-interval %v is below 10ms", *interval)
	case *backend != "hashmap" && *backend != "pebble":
		return usagef("--state-backend %q: want hashmap or pebble", *backend)
	}
	names := []string{*name}
	if *name == "all" {
		names = query.Names()
	}
	queries := make([]query.Query, len(names))
	for i, n := range names {
		if queries[i], err = query.Lookup(n); err != nil {
			return usagef("--query: %v", err)
		}
	}
	if err := checkNotInput([]pathFlag{{"input", *input}}, pathFlag{"output", *output}); err != nil {
		return err
	}
	if *input != "" {
		// A missing file fails (exit 1) as weir run's does.
		if _, err := os.Stat(*input); err != nil {
			return fmt.Errorf("nexmark run: --input: %w", err)
		}
	}
	if *output != "" && *name == "all" {
		// One file per query in the folder.
		if err := os.MkdirAll(*output, 0o755); err != nil {
			return fmt.Errorf("nexmark run: --output: %w", err)
		}
	}
	cfg := nexmark.DefaultConfig()
	cfg.Events, cfg.EventsPerSecond, cfg.Seed = *events, *tps, seed.v
	if *input == "" {
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
	}
	// The whole command's CPU, job building included (small next to a run
	// of any length worth profiling).
	stopProfile, err := startCPUProfile("nexmark run", *cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var all []query.Summary
	for _, q := range queries {
		o := query.Options{Config: cfg, Input: *input, Parallelism: *parallelism, StateBackend: *backend,
			StateDir: *stateDir, CheckpointInterval: *interval, CheckpointDir: *checkpointDir,
			NetworkMemory: networkMemory.bytes, BufferSize: int(bufferSize.bytes), HeapStateMemory: heapMemory.bytes}
		if *output != "" {
			o.Output = *output
			if *name == "all" {
				o.Output = filepath.Join(*output, q.Name+".jsonl")
			}
		}
		s, err := query.Run(ctx, q, o)
		if err != nil {
			return err
		}
		line, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", line)
		all = append(all, s)
	}
	if *name == "all" {
		writeNexmarkTable(stdout, all)
	}
	return nil
}

// writeNexmarkTable prints the summaries as a table, a line per query.
func writeNexmarkTable(w io.Writer, all []query.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tevents\twall s\tcpu s\tevents/s\tevents/s/core\tpeak MB\t")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.0f\t%.0f\t%d\t\n", s.Query, s.Events, s.WallSeconds, s.CPUSeconds,
			s.EventsPerSecond, s.EventsPerSecondPerCore, s.PeakMemoryBytes>>20)
	}
	tw.Flush()
}
