package windowagg

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/jsonline"
)

// Event is one input line.
type Event struct {
	TS    int64
	Key   string
	Value int64
	Text  string // the line as read, for the late output
}

// Parse decodes the event on one input line; errors name the file and line.
func Parse(l file.Line) (Event, error) {
	vals, err := jsonline.Object(l.Text, "event", "ts", "key", "value")
	if err != nil {
		return Event{}, fmt.Errorf("%s line %d: %w", l.Path, l.Number, err)
	}
	e := Event{Text: l.Text}
	if e.TS, err = jsonline.Int("ts", vals[0], "milliseconds"); err == nil {
		if e.Key, err = jsonline.String("key", vals[1]); err == nil {
			e.Value, err = jsonline.Int("value", vals[2], "")
		}
	}
	if err != nil {
		return Event{}, fmt.Errorf("%s line %d: %w", l.Path, l.Number, err)
	}
	return e, nil
}

// Agg is a window's aggregate, and one output line with its window.
type Agg struct {
	Key                    string
	WindowStart, WindowEnd int64
	Count, Sum, Min, Max   int64
}

// Format renders a result line.
func Format(a Agg) string {
	k, _ := json.Marshal(a.Key)
	return fmt.Sprintf(`{"key": %s, "window_start": %d, "window_end": %d, "count": %d, "sum": %d, "min": %d, "max": %d}`,
		k, a.WindowStart, a.WindowEnd, a.Count, a.Sum, a.Min, a.Max)
}

// aggregate counts, sums (wrapping like Java's long, as Flink's would) and
// takes the minimum and maximum of a window's values.
type aggregate struct{}

func (aggregate) CreateAccumulator() Agg { return Agg{Min: math.MaxInt64, Max: math.MinInt64} }
func (aggregate) Add(e Event, a Agg) Agg {
	a.Count++
	a.Sum += e.Value
	a.Min, a.Max = min(a.Min, e.Value), max(a.Max, e.Value)
	return a
}
func (aggregate) GetResult(a Agg) Agg { return a }
func (aggregate) Merge(a, b Agg) Agg {
	return Agg{Count: a.Count + b.Count, Sum: a.Sum + b.Sum, Min: min(a.Min, b.Min), Max: max(a.Max, b.Max)}
}

// Spec is a window kind and its sizes.
type Spec struct {
	Kind             string // "tumbling", "sliding" or "session"
	Size, Slide, Gap time.Duration
}

// ParseSpec reads tumbling:SIZE, sliding:SIZE,SLIDE or session:GAP.
func ParseSpec(s string) (Spec, error) {
	kind, args, _ := strings.Cut(s, ":")
	dur := func(what, v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d.Milliseconds() < 1 {
			return 0, fmt.Errorf("window %q: the %s %q must be a duration of at least 1ms, like 500ms, 5s or 2m", s, what, v)
		}
		return d, nil
	}
	var sp Spec
	var err error
	switch kind {
	case "tumbling":
		sp.Size, err = dur("size", args)
	case "sliding":
		size, slide, ok := strings.Cut(args, ",")
		if !ok {
			return sp, fmt.Errorf("window %q: want sliding:SIZE,SLIDE", s)
		}
		if sp.Size, err = dur("size", size); err == nil {
			sp.Slide, err = dur("slide", slide)
		}
	case "session":
		sp.Gap, err = dur("gap", args)
	default:
		return sp, fmt.Errorf("window %q: want tumbling:SIZE, sliding:SIZE,SLIDE or session:GAP", s)
	}
	sp.Kind = kind
	return sp, err
}

// Assigner is the spec's event-time window assigner.
func (sp Spec) Assigner() weir.WindowAssigner {
	switch sp.Kind {
	case "sliding":
		return weir.SlidingEventTimeWindows(sp.Size, sp.Slide)
	case "session":
		return weir.EventTimeSessionWindows(sp.Gap)
	}
	return weir.TumblingEventTimeWindows(sp.Size)
}

// Options configure a run.
type Options struct {
	Input      string // a file or directory of JSON lines
	Output     string // results: a file, or a directory with checkpoints
	LateOutput string // late elements, alike ("": dropped)
	Window     Spec
	// OutOfOrderness bounds how late elements may be for the watermark.
	OutOfOrderness, AllowedLateness time.Duration
	// Punctuated emits a watermark after every element; otherwise
	// periodically (Config's watermark interval, 200ms by default).
	Punctuated bool
	// RatePerSecond > 0 throttles the source (lines a second).
	RatePerSecond float64
	Config        weir.Config
}

var late = weir.NewOutputTag[Event]("late-events")

// Build declares the job: its results and its late elements.
func Build(env *weir.Environment, o Options) (weir.DataStream[Agg], weir.DataStream[Event]) {
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: o.Input, RatePerSecond: o.RatePerSecond}, o.Input).
		SetParallelism(1).UID("lines")
	events := weir.Process(lines, weir.ProcessFunc[file.Line, Event](func(_ weir.Context, l file.Line, out weir.Collector[Event]) error {
		e, err := Parse(l)
		if err == nil {
			out.Collect(e)
		}
		return err
	})).Name("Parse").UID("parse").SetParallelism(1)
	ws := weir.WatermarkStrategy[Event]{Timestamp: func(e Event) int64 { return e.TS }, MaxOutOfOrderness: o.OutOfOrderness}
	if o.Punctuated {
		ws.Generator = weir.PunctuatedWatermarks[Event](o.OutOfOrderness)
	}
	timed := weir.AssignTimestampsAndWatermarks(events, ws).UID("watermarks").SetParallelism(1)
	windowed := weir.Window(weir.KeyBy(timed, func(e Event) string { return e.Key }), o.Window.Assigner()).
		AllowedLateness(o.AllowedLateness).SideOutputLateData(late)
	results := weir.WindowAggregateProcess[string, Event, Agg, Agg, Agg](windowed, aggregate{},
		weir.ProcessWindowFunc[string, Agg, Agg](func(ctx weir.WindowContext[string], aggs []Agg, out weir.Collector[Agg]) error {
			a := aggs[0]
			a.Key, a.WindowStart, a.WindowEnd = ctx.CurrentKey(), ctx.Window().Start, ctx.Window().End
			out.Collect(a)
			return nil
		})).Name("Window").UID("window")
	return results, weir.SideOutput(results, late)
}

// Run runs the job; it returns once all input is processed and, with
// checkpoints, all output committed.
func Run(ctx context.Context, o Options) error {
	env := weir.NewEnvironment(o.Config)
	results, lateEvents := Build(env, o)
	text := func(e Event) string { return e.Text }
	if o.Config.Checkpointing != nil {
		weir.WriteFiles(results, o.Output, Format).Name("Results").UID("results")
		if o.LateOutput != "" {
			weir.WriteFiles(lateEvents, o.LateOutput, text).Name("Late events").UID("late")
		}
	} else {
		weir.WriteText(results, o.Output, Format).Name("Results").SetParallelism(1)
		if o.LateOutput != "" {
			weir.WriteText(lateEvents, o.LateOutput, text).Name("Late events").SetParallelism(1)
		}
	}
	_, err := env.Execute(ctx, "window-agg")
	return err
}
