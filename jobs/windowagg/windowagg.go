package windowagg

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/jsonline"
	"github.com/weirhq/weir/jobs/badrecords"
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
	e, err := ParseText(l.Text)
	if err != nil {
		return Event{}, fmt.Errorf("%s line %d: %w", l.Path, l.Number, err)
	}
	return e, nil
}

// ParseText decodes one event; its errors say what is wrong with the text,
// for the caller to say where it came from.
func ParseText(text string) (Event, error) {
	vals, err := jsonline.Object(text, "event", "ts", "key", "value")
	if err != nil {
		return Event{}, err
	}
	e := Event{Text: text}
	if e.TS, err = jsonline.Int("ts", vals[0], "milliseconds"); err == nil {
		if e.Key, err = jsonline.String("key", vals[1]); err == nil {
			e.Value, err = jsonline.Int("value", vals[2], "")
		}
	}
	if err != nil {
		return Event{}, err
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

// aggregate counts, sums and takes the minimum and maximum of a window's
// values. A running sum past int64 is not wrapped: the accumulator is
// marked overflowed, and firing the window fails the job (checkResult).
// This is conservative: values whose total fits but whose running sum in
// input order leaves int64 fail too.
//
// The mark keeps the accumulator's fields, and so its checkpointed form: a
// window with values has Min <= Max, so Count > 0 with Min > Max (the
// empty accumulator's Min and Max) means overflowed; an overflowed
// accumulator stays so, and only its Count moves on.
type aggregate struct{}

func (aggregate) CreateAccumulator() Agg { return Agg{Min: math.MaxInt64, Max: math.MinInt64} }

func overflowed(a Agg) bool { return a.Count > 0 && a.Min > a.Max }

func markOverflow(count int64) Agg {
	return Agg{Count: count, Min: math.MaxInt64, Max: math.MinInt64}
}

// addSum is a+b and whether it overflows int64.
func addSum(a, b int64) (int64, bool) {
	s := a + b
	return s, (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b)
}

func (aggregate) Add(e Event, a Agg) Agg {
	if overflowed(a) {
		return markOverflow(a.Count + 1)
	}
	sum, over := addSum(a.Sum, e.Value)
	if over {
		return markOverflow(a.Count + 1)
	}
	a.Count++
	a.Sum = sum
	a.Min, a.Max = min(a.Min, e.Value), max(a.Max, e.Value)
	return a
}
func (aggregate) GetResult(a Agg) Agg { return a }
func (aggregate) Merge(a, b Agg) Agg {
	sum, over := addSum(a.Sum, b.Sum)
	if over || overflowed(a) || overflowed(b) {
		return markOverflow(a.Count + b.Count)
	}
	return Agg{Count: a.Count + b.Count, Sum: sum, Min: min(a.Min, b.Min), Max: max(a.Max, b.Max)}
}

// checkResult fails the job, permanently (the same input overflows again
// after a restart), when a firing window's sum overflowed.
func checkResult(a Agg) error {
	if overflowed(a) {
		return failure.Permanent(fmt.Errorf("key %q window [%d, %d): the sum of its %d values overflows int64 (the running sum, in input order, must stay within int64)", a.Key, a.WindowStart, a.WindowEnd, a.Count))
	}
	return nil
}

// CheckWindows says whether every window sp assigns an element at ts can be
// held in int64 milliseconds: a window that would start before
// math.MinInt64 or end after math.MaxInt64 cannot, and an element in one is
// a bad record (its result could not be exact), as is math.MinInt64, which
// the engine reads as "no timestamp".
func (sp Spec) CheckWindows(ts int64) error {
	var size, slide int64
	switch sp.Kind {
	case "session":
		size, slide = sp.Gap.Milliseconds(), 1
	case "sliding":
		size, slide = sp.Size.Milliseconds(), sp.Slide.Milliseconds()
	default:
		size, slide = sp.Size.Milliseconds(), sp.Size.Milliseconds()
	}
	if ts == math.MinInt64 {
		return fmt.Errorf(`"ts" %d: the smallest int64 means "no timestamp" (as Flink's Long.MIN_VALUE); event times start one above it`, ts)
	}
	// Far from both ends every window fits.
	if ts > math.MinInt64+2*size+2*slide && ts < math.MaxInt64-2*size-2*slide {
		return nil
	}
	var first, last *big.Int // the earliest start and the latest end
	t := big.NewInt(ts)
	if sp.Kind == "session" {
		first, last = t, new(big.Int).Add(t, big.NewInt(size))
	} else {
		// The latest window starts at ts - (ts mod slide); the earliest
		// is the first start > ts - size in steps of slide below it.
		sl := big.NewInt(slide)
		latest := new(big.Int).Sub(t, new(big.Int).Mod(t, sl))
		last = new(big.Int).Add(latest, big.NewInt(size))
		lo := new(big.Int).Sub(t, big.NewInt(size-1)) // starts must be >= lo
		steps := new(big.Int).Sub(latest, lo)
		steps.Div(steps, sl)
		first = new(big.Int).Sub(latest, steps.Mul(steps, sl))
	}
	if first.Cmp(big.NewInt(math.MinInt64)) >= 0 && last.Cmp(big.NewInt(math.MaxInt64)) <= 0 {
		return nil
	}
	w := "window"
	if sp.Kind == "sliding" {
		w = "windows"
	}
	return fmt.Errorf(`"ts" %d: its %s [%s, %s) would reach past the milliseconds int64 holds (%d to %d), so its results could not be exact`,
		ts, w, first, last, int64(math.MinInt64), int64(math.MaxInt64))
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
	// BadRecords is what a line that is not an event does, or one whose
	// window cannot be held in int64 milliseconds (default badrecords.Fail:
	// the job fails naming file and line).
	BadRecords badrecords.Policy
	// DeadLetter is where bad lines go with badrecords.DeadLetter: a file,
	// or with checkpoints a directory written exactly once.
	DeadLetter string
	Config     weir.Config
}

var late = weir.NewOutputTag[Event]("late-events")

// Build declares the job: its results and its late elements.
func Build(env *weir.Environment, o Options) (weir.DataStream[Agg], weir.DataStream[Event]) {
	results, lateEvents, _ := build(env, o)
	return results, lateEvents
}

// build declares the job: its results, its late elements and its dead
// letters (badrecords.Line).
func build(env *weir.Environment, o Options) (weir.DataStream[Agg], weir.DataStream[Event], weir.DataStream[string]) {
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: o.Input, RatePerSecond: o.RatePerSecond}, o.Input).
		SetParallelism(1).UID("lines")
	events := badrecords.Lines(lines, o.BadRecords, func(l file.Line) (Event, error) {
		e, err := ParseText(l.Text)
		if err == nil {
			err = o.Window.CheckWindows(e.TS)
		}
		return e, err
	}).Name("Parse").UID("parse").SetParallelism(1)
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
			if err := checkResult(a); err != nil {
				return err
			}
			out.Collect(a)
			return nil
		})).Name("Window").UID("window")
	return results, weir.SideOutput(results, late), weir.SideOutput(events, badrecords.DeadLetters)
}

// Run runs the job; it returns once all input is processed and, with
// checkpoints, all output committed.
func Run(ctx context.Context, o Options) error {
	if err := badrecords.CheckTarget(o.BadRecords, o.DeadLetter, "Options.DeadLetter"); err != nil {
		return fmt.Errorf("window-agg: %w", err)
	}
	env := weir.NewEnvironment(o.Config)
	results, lateEvents, dead := build(env, o)
	text := func(e Event) string { return e.Text }
	line := func(s string) string { return s }
	if o.Config.Checkpointing != nil {
		weir.WriteFiles(results, o.Output, Format).Name("Results").UID("results")
		if o.LateOutput != "" {
			weir.WriteFiles(lateEvents, o.LateOutput, text).Name("Late events").UID("late")
		}
		if o.BadRecords == badrecords.DeadLetter {
			weir.WriteFiles(dead, o.DeadLetter, line).Name("Dead letters").UID("dead-letters")
		}
	} else {
		weir.WriteText(results, o.Output, Format).Name("Results").SetParallelism(1)
		if o.LateOutput != "" {
			weir.WriteText(lateEvents, o.LateOutput, text).Name("Late events").SetParallelism(1)
		}
		if o.BadRecords == badrecords.DeadLetter {
			weir.WriteText(dead, o.DeadLetter, line).Name("Dead letters").SetParallelism(1)
		}
	}
	_, err := env.Execute(ctx, "window-agg")
	return err
}
