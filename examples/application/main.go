package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/state"
	"github.com/weirhq/weir/tuple"
)

func main() {
	input := flag.String("input", "", "a file or folder of key<TAB>value lines (required)")
	output := flag.String("output", "", "the output folder (required)")
	checkpoints := flag.String("checkpoints", "", "the checkpoint folder (required)")
	parallelism := flag.Int("parallelism", 2, "parallelism of the job: it needs this many task slots")
	rate := flag.Float64("rate", 0, "lines per second to read (0: as fast as possible)")
	flag.Parse()
	if *input == "" || *output == "" || *checkpoints == "" {
		log.Fatal("application: -input, -output and -checkpoints are required")
	}
	// Everything up to Execute runs in every process and only declares the
	// job, from the arguments alone: no I/O, no clock, no environment.
	cfg := weir.Config{
		Parallelism:   *parallelism,
		Checkpointing: &weir.CheckpointConfig{Interval: 200 * time.Millisecond, Dir: *checkpoints},
		Restart: map[string]string{
			"restart-strategy.type":                 "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "10",
			"restart-strategy.fixed-delay.delay":    "200 ms",
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	env := weir.NewEnvironment(cfg)
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: *input, RatePerSecond: *rate}, "lines").UID("lines")
	records := weir.Process(lines, weir.ProcessFunc[file.Line, record](parse)).Name("parse").UID("parse")
	keyed := weir.KeyBy(records, func(r record) string { return r.Key })
	counts := weir.ProcessKeyed[string, record, string](keyed, &counter{}).Name("count").UID("count")
	weir.WriteFiles(counts, *output, func(s string) string { return s }).Name("files").UID("files")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := env.Execute(ctx, "application")
	if err != nil {
		log.Fatalf("application: %v", err)
	}
	fmt.Printf("application: job %s %s after %v\n", res.ID, res.Status, res.Duration.Round(time.Millisecond))
}

type record struct {
	Key   string
	Value int64
}

// parse reads a key<TAB>value line; a line that is not one fails the job
// for good, naming it (restarting cannot help with bad input).
func parse(_ weir.Context, l file.Line, out weir.Collector[record]) error {
	key, val, ok := strings.Cut(l.Text, "\t")
	v, err := strconv.ParseInt(val, 10, 64)
	if !ok || err != nil {
		return failure.Permanent(fmt.Errorf("%s line %d: want key<TAB>integer, got %q", l.Path, l.Number, l.Text))
	}
	out.Collect(record{Key: key, Value: v})
	return nil
}

// counter keeps each key's count and sum in ValueState, which the
// checkpoints save and a restart restores.
type counter struct {
	acc state.ValueState[tuple.T2[int64, int64]]
}

func (c *counter) Open(ctx weir.KeyedRuntimeContext) error {
	cd, err := codec.For[tuple.T2[int64, int64]]()
	if err != nil {
		return err
	}
	c.acc = state.GetValueState(ctx.State(), state.ValueDescriptor[tuple.T2[int64, int64]]{Name: "count-sum", Codec: cd})
	return nil
}

func (c *counter) ProcessElement(ctx weir.KeyedContext[string], r record, out weir.Collector[string]) error {
	acc, _ := c.acc.Value()
	acc.F0, acc.F1 = acc.F0+1, acc.F1+r.Value
	c.acc.Update(acc)
	out.Collect(r.Key + "\t" + strconv.FormatInt(acc.F0, 10) + "\t" + strconv.FormatInt(acc.F1, 10))
	return nil
}
