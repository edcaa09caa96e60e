package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir"
)

func main() {
	n := flag.Int64("numbers", 20000, "how many numbers the source reads")
	parallelism := flag.Int("parallelism", 2, "parallelism of the job")
	dir := flag.String("dir", "", "folder for the output and the checkpoints (default: a new temporary one)")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "weir-exactlyonce-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	out, checkpoints := filepath.Join(*dir, "out"), filepath.Join(*dir, "checkpoints")

	// Run 1: fails once on purpose, restarts from its last checkpoint, and
	// is canceled three checkpoints later, before it has read everything.
	ctx, cancel := context.WithCancel(context.Background())
	var restarted, afterRestart atomic.Int64
	cfg := config(*parallelism, checkpoints)
	cfg.OnRestart = func(attempt int, checkpoint int64, cause error) {
		fmt.Printf("run 1: restarted from checkpoint %d after: %v\n", checkpoint, cause)
		restarted.Store(1)
	}
	cfg.OnCheckpoint = func(id int64, final bool) {
		if restarted.Load() == 1 && afterRestart.Add(1) == 3 {
			fmt.Printf("run 1: checkpoint %d complete; canceling the job\n", id)
			cancel()
		}
	}
	env := weir.NewEnvironment(cfg)
	build(env, *n, out, true)
	if _, err := env.Execute(ctx, "exactlyonce"); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, weir.ErrCanceled) {
		log.Fatalf("run 1: %v", err)
	}
	cancel()
	seen, _, err := committed(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("run 1: %d numbers committed\n", len(seen))

	// Run 2: resumes from the latest checkpoint of the job of that name.
	cfg = config(*parallelism, checkpoints)
	cfg.ResumeFrom = "latest"
	env = weir.NewEnvironment(cfg)
	build(env, *n, out, false)
	if _, err := env.Execute(context.Background(), "exactlyonce"); err != nil {
		log.Fatalf("run 2: %v", err)
	}

	seen, files, err := committed(out)
	if err != nil {
		log.Fatal(err)
	}
	bad := 0
	for v := range *n {
		if seen[v] != 1 {
			if bad < 10 {
				fmt.Printf("number %d is in the output %d times\n", v, seen[v])
			}
			bad++
		}
	}
	if bad > 0 || int64(len(seen)) != *n {
		log.Fatalf("%d of %d numbers are not in the output exactly once", bad, *n)
	}
	fmt.Printf("run 2: done; all %d numbers are in the output exactly once, in %d committed files\n", *n, files)
}

// config is both runs' configuration: a checkpoint every 200 ms into
// dir, and restarts after a failure.
func config(parallelism int, dir string) weir.Config {
	return weir.Config{
		Parallelism:   parallelism,
		Checkpointing: &weir.CheckpointConfig{Interval: 200 * time.Millisecond, Dir: dir},
		Restart: map[string]string{
			"restart-strategy.type":                 "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "3",
			"restart-strategy.fixed-delay.delay":    "100 ms",
		},
	}
}

// build declares the job: the numbers source, a step that fails once when
// fail is set, and the files sink. The UIDs tie the state of the
// checkpoints to the operators when the job resumes.
func build(env *weir.Environment, n int64, out string, fail bool) {
	var failed atomic.Bool
	numbers := weir.FromSource(env, Numbers{N: n, Splits: 8, PerSecond: 5000}, "numbers").UID("numbers")
	checked := weir.Process(numbers, weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, c weir.Collector[int64]) error {
		if fail && v == n/4 && !failed.Swap(true) {
			return fmt.Errorf("a failure on purpose at number %d", v)
		}
		c.Collect(v)
		return nil
	})).Name("check").UID("check")
	weir.SinkToCommitting[int64, Committable](checked, Files{Dir: out}, "files").UID("files")
}
