package frauddetection

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/jsonline"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/state"
)

// Thresholds of the rule.
const (
	SmallAmount = 1.00
	LargeAmount = 500.00
	Window      = 60_000 // ms
)

// Transaction is one input line. Line is its 1-based line number in its file.
type Transaction struct {
	Account string
	Amount  float64
	TS      int64
	Line    int64
}

// Alert is one output line.
type Alert struct {
	Account string
	TS      int64
	Amount  float64
}

// MarshalJSON writes the alert with the output's field order.
func (a Alert) MarshalJSON() ([]byte, error) {
	acc, _ := json.Marshal(a.Account)
	return fmt.Appendf(nil, `{"account": %s, "ts": %d, "amount": %s}`, acc, a.TS, strconv.FormatFloat(a.Amount, 'f', -1, 64)), nil
}

// Parse decodes the transaction on one input line (see the package comment
// for what a valid line is). Errors name the line's file and number and say
// what is wrong.
func Parse(l file.Line) (Transaction, error) {
	tx, err := parse(l.Text)
	if err != nil {
		return Transaction{}, fmt.Errorf("%s line %d: %w", l.Path, l.Number, err)
	}
	tx.Line = l.Number
	return tx, nil
}

func parse(text string) (Transaction, error) {
	var tx Transaction
	vals, err := jsonline.Object(text, "transaction", "account", "amount", "ts")
	if err != nil {
		return tx, err
	}
	if tx.Account, err = jsonline.String("account", vals[0]); err != nil {
		return tx, err
	}
	if tx.Amount, err = jsonline.Float("amount", vals[1]); err != nil {
		return tx, err
	}
	tx.TS, err = jsonline.Int("ts", vals[2], "milliseconds")
	return tx, err
}

// Detector is the keyed process function of the job.
type Detector struct {
	small state.ValueState[int64] // ts of the previous transaction, if it was small
	timer state.ValueState[int64] // the cleanup timer registered for it
}

// Open declares the detector's keyed state.
func (d *Detector) Open(ctx weir.KeyedRuntimeContext) error {
	d.small = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "small-ts", Codec: codec.Int64()})
	d.timer = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "cleanup-timer", Codec: codec.Int64()})
	return nil
}

// ProcessElement applies the rule to one transaction of the current account.
func (d *Detector) ProcessElement(ctx weir.KeyedContext[string], tx Transaction, out weir.Collector[Alert]) error {
	if prev, ok := d.small.Value(); ok && tx.Amount > LargeAmount && within(prev, tx.TS) {
		out.Collect(Alert{Account: tx.Account, TS: tx.TS, Amount: tx.Amount})
	}
	// This transaction is now the previous one: forget the old.
	if t, ok := d.timer.Value(); ok {
		ctx.TimerService().DeleteEventTimeTimer(t)
		d.timer.Clear()
	}
	if tx.Amount < SmallAmount {
		d.small.Update(tx.TS)
		// After this time no transaction can be within the window of it.
		t := cleanupTime(tx.TS)
		ctx.TimerService().RegisterEventTimeTimer(t)
		d.timer.Update(t)
	} else {
		d.small.Clear()
	}
	return nil
}

// within reports whether ts is at most Window after prev, and not before it,
// for any int64 times (ts-prev may not fit int64; as uint64 it does).
func within(prev, ts int64) bool {
	return prev <= ts && uint64(ts)-uint64(prev) <= Window
}

// cleanupTime is when the state of a small transaction at ts can go:
// ts+Window, or math.MaxInt64 (the end of time) when that is past it.
func cleanupTime(ts int64) int64 {
	if ts > math.MaxInt64-Window {
		return math.MaxInt64
	}
	return ts + Window
}

// OnTimer clears the state of an account whose small transaction expired.
func (d *Detector) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[Alert]) error {
	d.small.Clear()
	d.timer.Clear()
	return nil
}

// Options configure a run.
type Options struct {
	// Input is a file, a directory of files or "-" (standard input); Output
	// a file or "-" (standard output).
	Input, Output string
	Parallelism   int
	StateBackend  string // "hashmap" (default) or "pebble"
	// MaxOutOfOrderness bounds how far back in event time a transaction may
	// come after a later one; cleanup timers wait that long (default 0).
	MaxOutOfOrderness time.Duration
	// WatermarkInterval is how often watermarks are emitted (default 200ms).
	WatermarkInterval time.Duration
	// BadRecords is what a line that is not a transaction does (default
	// badrecords.Fail: the job fails naming file and line); DeadLetter is
	// the file (or "-") bad lines go to with badrecords.DeadLetter.
	BadRecords badrecords.Policy
	DeadLetter string
	Config     weir.Config
	// Stdin and Stdout are what Input and Output "-" read and write (nil:
	// os.Stdin and os.Stdout).
	Stdin  io.Reader
	Stdout io.Writer
}

// Build declares the job over the numbered lines of its input and returns
// the alerts. The rule compares each transaction with the one before it on
// its account in input order, so the lines must come from one subtask in
// order and the parser runs at parallelism 1 (a keyed edge keeps the order
// of each producer).
func Build(env *weir.Environment, lines weir.DataStream[file.Line], ooo, interval time.Duration) weir.DataStream[Alert] {
	alerts, _ := build(env, lines, ooo, interval, badrecords.Fail)
	return alerts
}

// build is Build with a bad-record policy; it returns the alerts and the
// dead letters (badrecords.Line).
func build(env *weir.Environment, lines weir.DataStream[file.Line], ooo, interval time.Duration, bad badrecords.Policy) (weir.DataStream[Alert], weir.DataStream[string]) {
	txs := badrecords.Lines(lines, bad, func(l file.Line) (Transaction, error) {
		tx, err := parse(l.Text)
		tx.Line = l.Number
		return tx, err
	}).Name("Parse").SetParallelism(1)
	timed := weir.AssignTimestampsAndWatermarks(txs, weir.WatermarkStrategy[Transaction]{
		Timestamp: func(t Transaction) int64 { return t.TS }, MaxOutOfOrderness: ooo, Interval: interval,
	}).SetParallelism(1)
	keyed := weir.KeyBy(timed, func(t Transaction) string { return t.Account })
	return weir.ProcessKeyed[string, Transaction, Alert](keyed, &Detector{}).Name("Fraud detector").UID("fraud-detector"),
		weir.SideOutput(txs, badrecords.DeadLetters)
}

// Run runs the job over its input and writes the alerts.
func Run(ctx context.Context, o Options) error {
	if err := badrecords.CheckTarget(o.BadRecords, o.DeadLetter, "Options.DeadLetter"); err != nil {
		return fmt.Errorf("fraud-detection: %w", err)
	}
	cfg := o.Config
	if o.Parallelism > 0 {
		cfg.Parallelism = o.Parallelism
	}
	if o.StateBackend != "" {
		cfg.StateBackend = o.StateBackend
	}
	env := weir.NewEnvironment(cfg)
	// One subtask reads the files in name order, each line numbered in its
	// file, so errors can point at it.
	lines := weir.FromSource[file.Line](env, file.LineSource{Path: o.Input, Stdin: o.Stdin}, o.Input).SetParallelism(1)
	alerts, dead := build(env, lines, o.MaxOutOfOrderness, o.WatermarkInterval, o.BadRecords)
	weir.SinkTo[Alert](alerts, file.TextSink[Alert]{Path: o.Output, Stdout: o.Stdout, Format: func(a Alert) string {
		b, _ := a.MarshalJSON()
		return string(b)
	}}, o.Output).SetParallelism(1)
	if o.BadRecords == badrecords.DeadLetter {
		weir.SinkTo[string](dead, file.TextSink[string]{Path: o.DeadLetter, Stdout: o.Stdout, Format: func(s string) string { return s }}, o.DeadLetter).
			Name("Dead letters").SetParallelism(1)
	}
	_, err := env.Execute(ctx, "fraud-detection")
	return err
}
