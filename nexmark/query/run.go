package query

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/sink"
)

// Options say how Run runs a query.
type Options struct {
	// Config is the generator's configuration: Events, EventsPerSecond,
	// Seed. With Input set, only Events is used (0: the whole file).
	Config nexmark.Config
	// Input is a file of JSON lines written by `weir nexmark generate`;
	// "" generates the events.
	Input string
	// Output is where the result rows go as JSON lines; "" discards them.
	Output string
	// Parallelism of every operator (default 1).
	Parallelism int
	// StateBackend is "hashmap" (default) or "pebble"; StateDir is where
	// Pebble keeps its files.
	StateBackend, StateDir string
	// CheckpointInterval > 0 takes checkpoints that often into
	// CheckpointDir, where the last one is kept after the run; with no
	// CheckpointDir they go to a temporary directory that Run removes (a
	// run cannot be resumed, and a checkpoint of a large query is
	// gigabytes: kept, they filled the disk of the machine that ran the
	// benchmark a few dozen times).
	CheckpointInterval time.Duration
	CheckpointDir      string
	// NetworkMemory bounds the network buffers of the embedded cluster's
	// TaskManager, of BufferSize bytes each (weir.Config's; 0: defaults).
	NetworkMemory int64
	BufferSize    int
	// HeapStateMemory bounds the hashmap backend's tables (weir.Config's;
	// 0: its default).
	HeapStateMemory int64
}

// Summary is what Run measured.
type Summary struct {
	Engine                 string  `json:"engine"` // "weir"
	Query                  string  `json:"query"`
	Events                 int64   `json:"events"`
	WallSeconds            float64 `json:"wall_s"`
	CPUSeconds             float64 `json:"cpu_s"` // process CPU, user + system, all threads
	EventsPerSecond        float64 `json:"events_per_s"`
	EventsPerSecondPerCore float64 `json:"events_per_cpu_s"`
	PeakMemoryBytes        int64   `json:"peak_rss_bytes"` // the process's, so far
	// Rows is how many result rows went to Output (with an output).
	Rows int64 `json:"result_rows,omitempty"`
	// Checkpoints is how many checkpoints completed (the final one at the
	// end of the input included); 0 without checkpointing.
	Checkpoints int64 `json:"checkpoints"`
}

// Run runs q over o's events on the embedded cluster and reports what it
// cost: process CPU from after the job is built to its end.
func Run(ctx context.Context, q Query, o Options) (Summary, error) {
	if o.Parallelism <= 0 {
		o.Parallelism = 1
	}
	cfg := weir.Config{Parallelism: o.Parallelism, StateBackend: o.StateBackend, StateDir: o.StateDir, Mode: weir.Streaming,
		NetworkMemory: o.NetworkMemory, BufferSize: o.BufferSize, HeapStateMemory: o.HeapStateMemory}
	if o.CheckpointInterval > 0 {
		dir := o.CheckpointDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "weir-nexmark-checkpoints-")
			if err != nil {
				return Summary{}, fmt.Errorf("nexmark %s: a directory for its checkpoints: %w", q.Name, err)
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		cfg.Checkpointing = &weir.CheckpointConfig{Interval: o.CheckpointInterval, Dir: dir}
	}
	env := weir.NewEnvironment(cfg)
	events, counted, err := Events(env, o)
	if err != nil {
		return Summary{}, err
	}
	var out *os.File
	var w *bufio.Writer
	var rows atomic.Int64
	var rowsFn func(weir.DataStream[string])
	if o.Output != "" {
		if out, err = os.Create(o.Output); err != nil {
			return Summary{}, fmt.Errorf("nexmark %s: the output: %w", q.Name, err)
		}
		defer out.Close() // a second Close after the checked one is harmless
		w = bufio.NewWriterSize(out, 1<<16)
		rowsFn = func(s weir.DataStream[string]) {
			weir.SinkTo(s, &lineSink{w: w, rows: &rows}, "output").SetParallelism(1)
		}
	}
	in := NewInput(q, events, o.Config, rowsFn)
	if err := q.Build(in); err != nil {
		return Summary{}, fmt.Errorf("nexmark %s: %w", q.Name, err)
	}
	if !in.emitted {
		return Summary{}, fmt.Errorf("nexmark %s: the query emitted no results (Build must call Emit or EmitChanges)", q.Name)
	}
	start := cpumeter.Now()
	res, err := env.Execute(ctx, "nexmark-"+q.Name)
	if err != nil {
		return Summary{}, fmt.Errorf("nexmark %s: %w", q.Name, err)
	}
	cpu, wall := cpumeter.Now().Since(start)
	if w != nil {
		if err := w.Flush(); err != nil {
			return Summary{}, fmt.Errorf("nexmark %s: writing %s: %w", q.Name, o.Output, err)
		}
		if err := out.Close(); err != nil {
			return Summary{}, fmt.Errorf("nexmark %s: writing %s: %w", q.Name, o.Output, err)
		}
	}
	n := counted.Load()
	s := Summary{Engine: "weir", Query: q.Name, Events: n, WallSeconds: wall.Seconds(), CPUSeconds: cpu.Seconds(), PeakMemoryBytes: peakRSS(), Rows: rows.Load(),
		Checkpoints: res.Checkpoints}
	if wall > 0 {
		s.EventsPerSecond = float64(n) / wall.Seconds()
	}
	if cpu > 0 {
		s.EventsPerSecondPerCore = float64(n) / cpu.Seconds()
	}
	return s, nil
}

// Events adds o's events to env: generated, or read from o.Input, with
// the queries' timestamps and watermarks. The counter counts the events
// the sources emitted.
func Events(env *weir.Environment, o Options) (weir.DataStream[nexmark.Event], *atomic.Int64, error) {
	counted := new(atomic.Int64)
	ws := weir.WatermarkStrategy[nexmark.Event]{
		Timestamp:         func(e nexmark.Event) int64 { return e.DateTime() },
		MaxOutOfOrderness: WatermarkDelay,
	}
	if o.Input == "" {
		if err := o.Config.Validate(); err != nil {
			return weir.DataStream[nexmark.Event]{}, nil, err
		}
		counted.Store(o.Config.Events)
		return weir.FromSourceWithWatermarks[nexmark.Event, nexmark.Split](env, nexmark.Source{Config: o.Config}, ws, "nexmark"), counted, nil
	}
	if _, err := os.Stat(o.Input); err != nil {
		return weir.DataStream[nexmark.Event]{}, nil, fmt.Errorf("nexmark input: %w", err)
	}
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: o.Input}, "nexmark file").SetParallelism(1)
	limit := o.Config.Events
	decoded := weir.Process(lines, weir.ProcessFunc[file.Line, nexmark.Event](func(_ weir.Context, l file.Line, out weir.Collector[nexmark.Event]) error {
		if limit > 0 && l.Number > limit {
			return nil
		}
		var e nexmark.Event
		if err := nexmark.DecodeLine(l.Text, &e); err != nil {
			return fmt.Errorf("%s, line %d: %w", l.Path, l.Number, err)
		}
		counted.Add(1)
		out.Collect(e)
		return nil
	})).Name("decode events").SetParallelism(1)
	return weir.AssignTimestampsAndWatermarks(decoded, ws).SetParallelism(1), counted, nil
}

// lineSink writes rows to w, one per line.
type lineSink struct {
	w    *bufio.Writer
	rows *atomic.Int64
}

func (s *lineSink) CreateWriter(sink.Context) (sink.Writer[string], error) { return s, nil }

func (s *lineSink) Write(line string, _ int64) error {
	s.rows.Add(1)
	if _, err := s.w.WriteString(line); err != nil {
		return err
	}
	return s.w.WriteByte('\n')
}

func (s *lineSink) Flush(bool) error { return s.w.Flush() }

func (s *lineSink) Close() error { return nil }

// peakRSS is the process's peak resident memory in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
