package frauddetection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/file"
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

// blank reports whether a line holds only whitespace; the job skips such lines.
func blank(text string) bool { return strings.TrimSpace(text) == "" }

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

// The keys of a transaction; parse's seen is indexed alike.
var keys = [...]string{"account", "amount", "ts"}

func parse(text string) (Transaction, error) {
	var tx Transaction
	if !json.Valid([]byte(text)) {
		return tx, syntaxError(text)
	}
	// Valid JSON from here on, so the scanner need not check its syntax.
	sc := scanner{s: text}
	sc.space()
	if text[sc.i] != '{' {
		return tx, fmt.Errorf("not a JSON transaction: want an object {\"account\": ..., \"amount\": ..., \"ts\": ...}, got %s", describe(sc.value()))
	}
	var seen [len(keys)]bool
	for key, v := range sc.members() {
		i := 0
		for i < len(keys) && keys[i] != key {
			i++
		}
		if i == len(keys) {
			continue // not ours: ignored
		}
		if seen[i] {
			return tx, fmt.Errorf("%q appears twice", key)
		}
		seen[i] = true
		switch key {
		case "account":
			if v[0] != '"' {
				return tx, fmt.Errorf("\"account\" must be a JSON string, got %s", describe(v))
			}
			tx.Account = unquote(v)
		case "amount":
			if !isNumber(v) {
				return tx, fmt.Errorf("\"amount\" must be a JSON number, got %s", describe(v))
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return tx, fmt.Errorf("\"amount\" %s is out of range", clip(v))
			}
			tx.Amount = f
		case "ts":
			if !isNumber(v) {
				return tx, fmt.Errorf("\"ts\" must be a JSON integer number of milliseconds, got %s", describe(v))
			}
			if strings.ContainsAny(v, ".eE") {
				return tx, fmt.Errorf("\"ts\" %s is not an integer number of milliseconds (write it without fraction or exponent)", clip(v))
			}
			ts, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return tx, fmt.Errorf("\"ts\" %s is out of range (milliseconds from %d to %d)", clip(v), int64(math.MinInt64), int64(math.MaxInt64))
			}
			tx.TS = ts
		}
	}
	for i, key := range keys {
		if seen[i] {
			continue
		}
		sc := scanner{s: text}
		sc.space()
		for other := range sc.members() {
			if strings.EqualFold(other, key) {
				return tx, fmt.Errorf("no %q (keys are case-sensitive; the line has %q)", key, other)
			}
		}
		return tx, fmt.Errorf("no %q: %.200q", key, text)
	}
	return tx, nil
}

// syntaxError explains why text is not valid JSON.
func syntaxError(text string) error {
	if blank(text) {
		return errors.New("not a JSON transaction: the line is blank")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	var v json.RawMessage
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return fmt.Errorf("not a JSON transaction: more after the object's closing brace: %.200q", text)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("not a JSON transaction: the line ends inside the JSON: %.200q", text)
	case errors.As(err, &se):
		return fmt.Errorf("not a JSON transaction: %s (at byte %d): %.200q", se.Error(), se.Offset, text)
	}
	return fmt.Errorf("not a JSON transaction: %.200q", text)
}

// scanner walks text that is known to be valid JSON.
type scanner struct {
	s string
	i int
}

func (sc *scanner) space() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t' || sc.s[sc.i] == '\n' || sc.s[sc.i] == '\r') {
		sc.i++
	}
}

// members yields the keys (unquoted) and values (as JSON text) of the
// object at the scanner.
func (sc *scanner) members() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		sc.i++ // {
		for {
			sc.space()
			if sc.s[sc.i] == '}' {
				return
			}
			if sc.s[sc.i] == ',' {
				sc.i++
				sc.space()
			}
			key := unquote(sc.str())
			sc.space()
			sc.i++ // :
			sc.space()
			if !yield(key, sc.value()) {
				return
			}
		}
	}
}

// str returns the JSON string at the scanner, quotes and escapes included.
func (sc *scanner) str() string {
	start := sc.i
	for sc.i++; ; sc.i++ {
		switch sc.s[sc.i] {
		case '\\':
			sc.i++
		case '"':
			sc.i++
			return sc.s[start:sc.i]
		}
	}
}

// value returns the JSON value at the scanner, as text.
func (sc *scanner) value() string {
	start := sc.i
	switch sc.s[sc.i] {
	case '"':
		sc.str()
	case '{', '[':
		for depth := 0; ; {
			switch sc.s[sc.i] {
			case '"':
				sc.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			sc.i++
			if depth == 0 {
				break
			}
		}
	default: // a number, true, false or null
		for sc.i < len(sc.s) && !strings.ContainsRune(",}] \t\r\n", rune(sc.s[sc.i])) {
			sc.i++
		}
	}
	return sc.s[start:sc.i]
}

// unquote returns the value of a valid JSON string.
func unquote(v string) string {
	if !strings.ContainsRune(v, '\\') {
		return v[1 : len(v)-1]
	}
	var s string
	json.Unmarshal([]byte(v), &s)
	return s
}

func isNumber(v string) bool { return v[0] == '-' || '0' <= v[0] && v[0] <= '9' }

// describe names the type of a JSON value, and the value, for a message.
func describe(v string) string {
	switch v[0] {
	case '"':
		return "string " + clip(v)
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "boolean " + v
	case 'n':
		return "null"
	}
	return "number " + clip(v)
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) <= 60 {
		return s
	}
	i := 57
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
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
	Config            weir.Config
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
	txs := weir.Process(lines, weir.ProcessFunc[file.Line, Transaction](func(_ weir.Context, l file.Line, out weir.Collector[Transaction]) error {
		if blank(l.Text) {
			return nil
		}
		tx, err := Parse(l)
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

// Run runs the job over its input and writes the alerts.
func Run(ctx context.Context, o Options) error {
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
	alerts := Build(env, lines, o.MaxOutOfOrderness, o.WatermarkInterval)
	weir.SinkTo[Alert](alerts, file.TextSink[Alert]{Path: o.Output, Stdout: o.Stdout, Format: func(a Alert) string {
		b, _ := a.MarshalJSON()
		return string(b)
	}}, o.Output).SetParallelism(1)
	_, err := env.Execute(ctx, "fraud-detection")
	return err
}
