// Extapp is a program run in application mode whose job depends on its
// environment, not only on its arguments: the mistake a TaskManager's
// check of the graph fingerprint and the configuration catches.
// EXTAPP_VARIANT adds a stage; EXTAPP_BUFFER_TIMEOUT sets the buffer
// timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
)

func main() {
	input := flag.String("input", "", "input file")
	output := flag.String("output", "", "output folder")
	checkpoints := flag.String("checkpoints", "", "checkpoint folder")
	flag.Parse()
	cfg := weir.Config{Checkpointing: &weir.CheckpointConfig{Interval: time.Second, Dir: *checkpoints},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if d, err := time.ParseDuration(os.Getenv("EXTAPP_BUFFER_TIMEOUT")); err == nil {
		cfg.BufferTimeout = d
	}
	env := weir.NewEnvironment(cfg)
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: *input}, "lines").UID("lines")
	texts := weir.Map(lines, func(l file.Line) string { return l.Text })
	if os.Getenv("EXTAPP_VARIANT") != "" {
		texts = weir.Filter(texts, func(s string) bool { return s != "" })
	}
	weir.WriteFiles(texts, *output, func(s string) string { return s }).UID("files")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := env.Execute(ctx, "extapp"); err != nil {
		fmt.Fprintln(os.Stderr, "extapp:", err)
		os.Exit(1)
	}
	fmt.Println("extapp: done")
}
