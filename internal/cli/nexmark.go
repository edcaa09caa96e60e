package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/weirhq/weir/nexmark"
)

// nexmarkCommand is `weir nexmark <subcommand>`: the Nexmark benchmark's
// tools (docs/nexmark.md).
func nexmarkCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("nexmark needs a command: generate")
	}
	switch args[0] {
	case "generate":
		return nexmarkGenerate(ctx, args[1:], stdout)
	case "help", "-h", "--help", "-help":
		return errHelp
	}
	return usagef("unknown nexmark command %q (there is: generate)", args[0])
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
