// Package frauddetection is the built-in fraud-detection job, after Flink's
// tutorial: it reads transactions and alerts on every transaction above
// 500.00 whose immediately previous transaction on the same account was below
// 1.00 and at most one minute earlier by event time.
//
// Input: JSON lines {"account": "<id>", "amount": <number>, "ts": <epoch ms>},
// read in file order by one source subtask. Output: JSON lines
// {"account": "<id>", "ts": <ms>, "amount": <number>}, one per alert.
//
// Keyed state per account holds only the timestamp of a pending small
// transaction; an event-time timer one minute after it clears it, so state
// does not grow with the number of accounts ever seen.
package frauddetection

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// Thresholds of the rule.
const (
	SmallAmount = 1.00
	LargeAmount = 500.00
	Window      = 60_000 // ms
)

// Transaction is one input line. Line is its 1-based line number in the input.
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

// Parse decodes one input line; errors name the line and what is wrong.
func Parse(line string, lineNo int64) (Transaction, error) {
	var raw struct {
		Account *string      `json:"account"`
		Amount  *json.Number `json:"amount"`
		TS      *json.Number `json:"ts"`
	}
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		return Transaction{}, fmt.Errorf("input line %d: not a JSON transaction: %v: %.200q", lineNo, err, line)
	}
	switch {
	case raw.Account == nil:
		return Transaction{}, fmt.Errorf("input line %d: no \"account\": %.200q", lineNo, line)
	case raw.Amount == nil:
		return Transaction{}, fmt.Errorf("input line %d: no \"amount\": %.200q", lineNo, line)
	case raw.TS == nil:
		return Transaction{}, fmt.Errorf("input line %d: no \"ts\": %.200q", lineNo, line)
	}
	amount, err := raw.Amount.Float64()
	if err != nil || math.IsNaN(amount) || math.IsInf(amount, 0) {
		return Transaction{}, fmt.Errorf("input line %d: \"amount\" %s is not a finite number", lineNo, *raw.Amount)
	}
	ts, err := raw.TS.Int64()
	if err != nil {
		return Transaction{}, fmt.Errorf("input line %d: \"ts\" %s is not an integer of milliseconds", lineNo, *raw.TS)
	}
	return Transaction{Account: *raw.Account, Amount: amount, TS: ts, Line: lineNo}, nil
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
	if prev, ok := d.small.Value(); ok && tx.Amount > LargeAmount && prev <= tx.TS && tx.TS-prev <= Window {
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
		t := tx.TS + Window
		ctx.TimerService().RegisterEventTimeTimer(t)
		d.timer.Update(t)
	} else {
		d.small.Clear()
	}
	return nil
}

// OnTimer clears the state of an account whose small transaction expired.
func (d *Detector) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[Alert]) error {
	d.small.Clear()
	d.timer.Clear()
	return nil
}

// Options configure a run.
type Options struct {
	Input, Output string
	Parallelism   int
	StateBackend  string // "hashmap" (default) or "pebble"
	// MaxOutOfOrderness bounds how far back in event time a transaction may
	// come after a later one; cleanup timers wait that long (default 0).
	MaxOutOfOrderness time.Duration
	// WatermarkInterval is how often watermarks are emitted (default 200ms).
	WatermarkInterval time.Duration
	Config            weir.Config
}

// Build declares the job and returns the alerts.
func Build(env *weir.Environment, lines weir.DataStream[string], ooo, interval time.Duration) weir.DataStream[Alert] {
	var lineNo int64 // the parser runs at parallelism 1, in file order
	txs := weir.Process(lines, weir.ProcessFunc[string, Transaction](func(_ weir.Context, l string, out weir.Collector[Transaction]) error {
		lineNo++
		tx, err := Parse(l, lineNo)
		if err == nil {
			out.Collect(tx)
		}
		return err
	})).Name("Parse").SetParallelism(1)
	timed := weir.AssignTimestampsAndWatermarks(txs, weir.WatermarkStrategy[Transaction]{
		Timestamp: func(t Transaction) int64 { return t.TS }, MaxOutOfOrderness: ooo, Interval: interval,
	}).SetParallelism(1)
	keyed := weir.KeyBy(timed, func(t Transaction) string { return t.Account })
	return weir.ProcessKeyed[string, Transaction, Alert](keyed, &Detector{}).Name("Fraud detector").UID("fraud-detector")
}

// Run runs the job over a file and writes the alerts.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if o.Parallelism > 0 {
		cfg.Parallelism = o.Parallelism
	}
	if o.StateBackend != "" {
		cfg.StateBackend = o.StateBackend
	}
	env := weir.NewEnvironment(cfg)
	lines := weir.ReadTextFile(env, o.Input).SetParallelism(1)
	alerts := Build(env, lines, o.MaxOutOfOrderness, o.WatermarkInterval)
	weir.WriteText(alerts, o.Output, func(a Alert) string {
		b, _ := a.MarshalJSON()
		return string(b)
	}).SetParallelism(1)
	_, err := env.Execute(ctx, "fraud-detection")
	return err
}
