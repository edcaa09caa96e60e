package keyedcount

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/state"
	"github.com/weirhq/weir/tuple"
)

// Record is one input line, parsed.
type Record struct {
	Key   string
	Value int64
}

// Count is one output line.
type Count struct {
	Key    string
	N, Sum int64
}

// Format renders a count as an output line.
func Format(c Count) string {
	return c.Key + "\t" + strconv.FormatInt(c.N, 10) + "\t" + strconv.FormatInt(c.Sum, 10)
}

// Parse reads one input line; errors name the file and line.
func Parse(l file.Line) (Record, error) {
	r, err := ParseText(l.Text)
	if err != nil {
		return Record{}, fmt.Errorf("%s line %d: %w", l.Path, l.Number, err)
	}
	return r, nil
}

// ParseText reads one record "key<TAB>value" (value an int64, spaces
// around it allowed); its errors say what is wrong with the text, for the
// caller to say where it came from.
func ParseText(text string) (Record, error) {
	key, val, ok := strings.Cut(text, "\t")
	if !ok {
		return Record{}, fmt.Errorf("want key<TAB>value, got %.80q", text)
	}
	if key == "" {
		return Record{}, errors.New("the key is empty")
	}
	v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
	if err != nil {
		return Record{}, fmt.Errorf("value %.40q is not an integer", val)
	}
	return Record{Key: key, Value: v}, nil
}

// Counter keeps the running count and sum of each key.
type Counter struct {
	acc state.ValueState[tuple.T2[int64, int64]]
}

// Open declares the keyed state.
func (c *Counter) Open(ctx weir.KeyedRuntimeContext) error {
	cd, err := codec.For[tuple.T2[int64, int64]]()
	if err != nil {
		return err
	}
	c.acc = state.GetValueState(ctx.State(), state.ValueDescriptor[tuple.T2[int64, int64]]{Name: "count-sum", Codec: cd})
	return nil
}

// ProcessElement counts one record.
func (c *Counter) ProcessElement(ctx weir.KeyedContext[string], r Record, out weir.Collector[Count]) error {
	acc, _ := c.acc.Value()
	n := acc.F0 + 1
	sum, overflow := add(acc.F1, r.Value)
	if overflow {
		// The same records would overflow again after a restart.
		return failure.Permanent(fmt.Errorf("key %q: the sum overflows int64 (%d + %d, at its record number %d)", r.Key, acc.F1, r.Value, n))
	}
	c.acc.Update(tuple.T2[int64, int64]{F0: n, F1: sum})
	out.Collect(Count{Key: r.Key, N: n, Sum: sum})
	return nil
}

func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b)
}

// Options configure a run.
type Options struct {
	Input  string // a file or directory of "key<TAB>value" lines
	Output string // the output directory
	// RatePerSecond > 0 throttles the source (lines a second), so a run can
	// be killed in the middle.
	RatePerSecond float64
	// BadRecords is what a line that is not key<TAB>value does (default
	// badrecords.Fail: the job fails naming file and line).
	BadRecords badrecords.Policy
	// DeadLetter is the directory the bad lines go to with
	// badrecords.DeadLetter, exactly once like the output.
	DeadLetter string
	Config     weir.Config // with Checkpointing set
}

// Build declares the job and returns the counts. Blank lines are skipped;
// other bad lines are handled by o.BadRecords.
func Build(env *weir.Environment, o Options) weir.DataStream[Count] {
	counts, _ := build(env, o)
	return counts
}

// build declares the job and returns the counts and the dead letters
// (badrecords.Line) of the parsing operator.
func build(env *weir.Environment, o Options) (weir.DataStream[Count], weir.DataStream[string]) {
	lines := weir.FromSource[file.Line, file.Split](env, file.LineSource{Path: o.Input, RatePerSecond: o.RatePerSecond}, o.Input).UID("lines")
	records := badrecords.Lines(lines, o.BadRecords, func(l file.Line) (Record, error) { return ParseText(l.Text) }).Name("Parse").UID("parse")
	keyed := weir.KeyBy(records, func(r Record) string { return r.Key })
	return weir.ProcessKeyed[string, Record, Count](keyed, &Counter{}).Name("Count").UID("count"), weir.SideOutput(records, badrecords.DeadLetters)
}

// Run runs the job: exit once all input is processed and all output committed.
func Run(ctx context.Context, o Options) error {
	if err := badrecords.CheckTarget(o.BadRecords, o.DeadLetter, "Options.DeadLetter"); err != nil {
		return fmt.Errorf("keyed-count: %w", err)
	}
	env := weir.NewEnvironment(o.Config)
	counts, dead := build(env, o)
	weir.WriteFiles(counts, o.Output, Format).Name("Committed counts").UID("sink")
	if o.BadRecords == badrecords.DeadLetter {
		weir.WriteFiles(dead, o.DeadLetter, func(s string) string { return s }).Name("Dead letters").UID("dead-letters")
	}
	_, err := env.Execute(ctx, "keyed-count")
	return err
}
