// Command extjob runs the keyed count over extconnector's source and sink:
// a job built from outside Weir's module.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/extconnector"
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/jobs/keyedcount"
)

func main() {
	in := flag.String("input", "", "directory of key<TAB>value files")
	out := flag.String("output", "", "output directory")
	ck := flag.String("checkpoint-dir", "", "checkpoint directory")
	interval := flag.Duration("checkpoint-interval", 200*time.Millisecond, "")
	rate := flag.Float64("rate", 0, "lines a second")
	p := flag.Int("parallelism", 2, "")
	backend := flag.String("state-backend", "hashmap", "")
	unaligned := flag.Bool("unaligned", false, "")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := weir.NewEnvironment(weir.Config{Parallelism: *p, StateBackend: *backend, ResumeFrom: "latest",
		Checkpointing: &weir.CheckpointConfig{Interval: *interval, Dir: *ck, Unaligned: *unaligned},
		OnSubmit: func(j *weir.Job) {
			if r := j.RestoredFrom(); r != "" {
				fmt.Fprintln(os.Stderr, "extjob: resuming from", r)
			}
		},
		OnCheckpoint: func(id int64, final bool) {
			if final {
				fmt.Fprintln(os.Stderr, "extjob: final checkpoint", id)
			}
		}})
	lines := weir.FromSource[string, extconnector.FileSplit](env, extconnector.Lines{Dir: *in, RatePerSecond: *rate}, "lines").UID("lines")
	records := weir.Map(lines, func(l string) keyedcount.Record {
		k, v, _ := strings.Cut(l, "\t")
		n, _ := strconv.ParseInt(v, 10, 64)
		return keyedcount.Record{Key: k, Value: n}
	}).UID("parse")
	counts := weir.ProcessKeyed[string, keyedcount.Record, keyedcount.Count](weir.KeyBy(records, func(r keyedcount.Record) string { return r.Key }), &keyedcount.Counter{}).UID("count")
	text := weir.Map(counts, keyedcount.Format).UID("format")
	weir.SinkToCommitting[string, extconnector.Pending](text, extconnector.Files{Dir: *out}, "files").UID("sink")
	if _, err := env.Execute(ctx, "ext-keyed-count"); err != nil {
		fmt.Fprintln(os.Stderr, "extjob:", err)
		os.Exit(1)
	}
}
