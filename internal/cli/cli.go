package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/jobs/clicks"
	"github.com/weirhq/weir/jobs/frauddetection"
	"github.com/weirhq/weir/jobs/wordcount"
)

const usage = `weir: a stream processor in the family of Apache Flink.

Usage:
  weir version                 print the version
  weir run <job> [flags]       run a built-in job on the embedded local cluster
  weir bench <name> [flags]    run an engine benchmark and report events/s per core:
                               chained (--events N), shuffle (--events N --parallelism N),
                               wordcount (--size-mb N --parallelism N)
  weir list [--address A]      list the jobs of a running cluster
  weir cancel <job-id> [--address A]
                               cancel a job of a running cluster

Built-in jobs:
  wordcount   count words: --input FILE --output FILE [--parallelism N]
              (without --input: counts a sample text and prints the top 20 words)
  clicks      a live stream of page clicks with a rolling count per page;
              runs until Ctrl-C: [--rate N] [--count N] [--parallelism N]
  fraud-detection
              alerts on a transaction above 500.00 right after one below 1.00
              on the same account within a minute: --input FILE --output FILE
              [--state-backend hashmap|pebble] [--max-out-of-orderness D] [--parallelism N]

Flags of run (all jobs):
  --parallelism N       default parallelism (default 1)
  --rest-address A      where the REST API listens (default 127.0.0.1:8081; "" for none)
  --buffer-timeout D    longest a partly filled network buffer waits (default 100ms)
  --log-level L         debug, info, warn or error (default warn)
  --state-backend B     where keyed state lives: hashmap (default) or pebble
`

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "weir %s (%s %s/%s)\n", weir.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "run":
		err = run(args[1:], stdout, stderr)
	case "bench":
		err = bench(args[1:], stdout)
	case "list":
		err = list(args[1:], stdout)
	case "cancel":
		err = cancel(args[1:], stdout)
	default:
		fmt.Fprintf(stderr, "weir: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "weir: %v\n\n%s", err, usage)
			return 2
		}
		fmt.Fprintf(stderr, "weir: %v\n", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// splitArgs separates flags from positional arguments, so flags may follow them.
func splitArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	parallelism := fs.Int("parallelism", 1, "")
	restAddr := fs.String("rest-address", rest.DefaultAddr, "")
	bufferTimeout := fs.Duration("buffer-timeout", 100*time.Millisecond, "")
	logLevel := fs.String("log-level", "warn", "")
	input := fs.String("input", "", "")
	output := fs.String("output", "", "")
	rate := fs.Float64("rate", 5, "")
	count := fs.Int64("count", -1, "")
	backend := fs.String("state-backend", "hashmap", "")
	ooo := fs.Duration("max-out-of-orderness", 0, "")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"run needs exactly one job name"}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	cfg := weir.Config{
		Parallelism: *parallelism, RESTAddr: *restAddr, BufferTimeout: *bufferTimeout, StateBackend: *backend,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch pos[0] {
	case "wordcount":
		return wordcount.Run(ctx, wordcount.Options{Input: *input, Output: *output, Parallelism: *parallelism, Stdout: stdout, Config: cfg})
	case "fraud-detection":
		if *input == "" || *output == "" {
			return usageError{"fraud-detection needs --input and --output"}
		}
		return frauddetection.Run(ctx, frauddetection.Options{Input: *input, Output: *output, Parallelism: *parallelism,
			StateBackend: *backend, MaxOutOfOrderness: *ooo, Config: cfg})
	case "clicks":
		if *restAddr != "" {
			fmt.Fprintf(stderr, "weir: running clicks until Ctrl-C; REST API at http://%s\n", *restAddr)
		}
		err := clicks.Run(ctx, clicks.Options{RatePerSecond: *rate, Count: *count, Parallelism: *parallelism, Config: cfg})
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "weir: canceled")
			return nil
		}
		return err
	}
	return usageError{fmt.Sprintf("unknown job %q (built-in jobs: wordcount, clicks, fraud-detection)", pos[0])}
}

func client(fs *flag.FlagSet, args []string) (*rest.Client, []string, error) {
	addr := fs.String("address", rest.DefaultAddr, "")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return nil, nil, err
	}
	return rest.NewClient(*addr, nil), pos, nil
}

func list(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, _, err := client(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jobs, err := c.JobsOverview(ctx)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		fmt.Fprintln(stdout, "no jobs")
		return nil
	}
	fmt.Fprintf(stdout, "%-32s  %-10s  %-23s  %s\n", "ID", "STATE", "START", "NAME")
	for _, j := range jobs {
		start := time.UnixMilli(j.StartTime).Format("2006-01-02 15:04:05")
		fmt.Fprintf(stdout, "%-32s  %-10s  %-23s  %s\n", j.ID, j.State, start, j.Name)
	}
	return nil
}

func cancel(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, pos, err := client(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !rest.ValidJobID(strings.TrimSpace(pos[0])) {
		return usageError{"cancel needs one job ID (32 lowercase hex digits; see weir list)"}
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := c.Cancel(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cancel requested for job %s\n", pos[0])
	return nil
}
