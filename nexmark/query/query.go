package query

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// Query is one Nexmark query.
type Query struct {
	// Name is the query's name as Nexmark has it: "q0" to "q22".
	Name string
	// Columns are the columns of the result table the query's INSERT writes
	// to, in order: the keys of its JSON output rows.
	Columns []string
	// Build adds the query to the events' environment. It ends with one call
	// of Emit or EmitChanges on in.
	Build func(in *Input) error
}

// WatermarkDelay is the queries' watermark: dateTime - 4 s, as Nexmark's
// DDL declares it.
const WatermarkDelay = 4 * time.Second

// Input is what a query is built from.
type Input struct {
	// Events are the Nexmark events, with their dateTime as timestamp and
	// watermarks WatermarkDelay behind the largest dateTime seen.
	Events weir.DataStream[nexmark.Event]
	// Config is the generator's configuration (for the few queries that
	// depend on it; a file's events come with the default).
	Config nexmark.Config

	columns []string
	rows    func(weir.DataStream[string]) // nil: results are discarded
	emitted bool
}

// NewInput returns the input of query q over events. With rows nil its
// results are discarded; otherwise rows gets the stream of the final result
// rows as JSON objects keyed by q's columns (what Emit or EmitChanges makes
// of the results).
func NewInput(q Query, events weir.DataStream[nexmark.Event], cfg nexmark.Config, rows func(weir.DataStream[string])) *Input {
	return &Input{Events: events, Config: cfg, columns: q.Columns, rows: rows}
}

// Row is one result row: its values in the order of the result table's
// columns, each an int64, a float64, a string, a bool or nil (SQL NULL).
// Timestamps are epoch milliseconds (int64).
type Row []any

// Change is one element of an updating result: a row added to the result
// table, or (Retract) one occurrence of a row taken out of it. An update is
// a retraction of the old row followed by the new one.
type Change[R any] struct {
	Retract bool
	Value   R
}

// Insert and Retract make changes.
func Insert[R any](v R) Change[R]  { return Change[R]{Value: v} }
func Retract[R any](v R) Change[R] { return Change[R]{Retract: true, Value: v} }

// Emit ends a query whose results only ever add rows (an append stream):
// each result becomes the row that row makes of it.
func Emit[R any](in *Input, results weir.DataStream[R], row func(R) Row) {
	in.markEmitted()
	if in.rows == nil {
		weir.Discard(results)
		return
	}
	cols := in.columns
	in.rows(weir.Map(results, func(r R) string { return JSON(cols, row(r)) }).Name("result rows"))
}

// EmitChanges ends a query whose results update earlier ones (a changelog,
// as Flink's retracting operators emit): with rows requested, the changes
// are materialized into the final result table, whose rows come out when
// the (bounded) input ends; a row retracted more often than it was added
// fails the job.
func EmitChanges[R any](in *Input, changes weir.DataStream[Change[R]], row func(R) Row) {
	in.markEmitted()
	if in.rows == nil {
		weir.Discard(changes)
		return
	}
	counted := weir.Map(changes, func(c Change[R]) lineCount {
		n := int64(1)
		if c.Retract {
			n = -1
		}
		return lineCount{Line: string(row(c.Value).appendValues(nil)), N: n}
	}).Name("result changes")
	keyed := weir.KeyByWithCodec(counted, func(c lineCount) string { return c.Line }, codec.String())
	final := weir.ProcessKeyed(keyed, weir.KeyedProcessFunction[string, lineCount, string](&materializer{columns: in.columns}))
	in.rows(final.Name("final result table"))
}

func (in *Input) markEmitted() {
	if in.emitted {
		panic("nexmark query: Emit or EmitChanges called twice")
	}
	in.emitted = true
}

// lineCount is a change of a row (its values encoded as a JSON array) by
// N occurrences.
type lineCount struct {
	Line string
	N    int64
}

// materializer counts the occurrences of each row and emits them when the
// input ends (the timer at the largest event time fires at the end of a
// bounded input, after every change).
type materializer struct {
	columns []string
	count   state.ValueState[int64]
}

func (m *materializer) Open(ctx weir.KeyedRuntimeContext) error {
	m.count = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "occurrences", Codec: codec.Int64()})
	return nil
}

func (m *materializer) ProcessElement(ctx weir.KeyedContext[string], c lineCount, _ weir.Collector[string]) error {
	n, _ := m.count.Value()
	if n == 0 {
		ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64)
	}
	if n += c.N; n == 0 {
		m.count.Clear()
	} else {
		m.count.Update(n)
	}
	return nil
}

func (m *materializer) OnTimer(ctx weir.OnTimerContext[string], _ int64, out weir.Collector[string]) error {
	n, _ := m.count.Value()
	if n < 0 {
		return fmt.Errorf("the result row %s was retracted %d times more than it was added", ctx.CurrentKey(), -n)
	}
	row, err := parseValues(ctx.CurrentKey())
	if err != nil {
		return err
	}
	line := JSON(m.columns, row)
	for range n {
		out.Collect(line)
	}
	m.count.Clear()
	return nil
}

// JSON writes row as a JSON object keyed by columns.
func JSON(columns []string, row Row) string {
	if len(row) != len(columns) {
		panic(fmt.Sprintf("nexmark query: a row of %d values for %d columns %v", len(row), len(columns), columns))
	}
	b := []byte{'{'}
	for i, c := range columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c)
		b = append(b, ':')
		b = appendValue(b, row[i])
	}
	return string(append(b, '}'))
}

// appendValues appends row's values as a JSON array.
func (row Row) appendValues(b []byte) []byte {
	b = append(b, '[')
	for i, v := range row {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, v)
	}
	return append(b, ']')
}

func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return append(b, "null"...)
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case string:
		return strconv.AppendQuote(b, v)
	case bool:
		return strconv.AppendBool(b, v)
	}
	panic(fmt.Sprintf("nexmark query: a row value of type %T (want int64, float64, string, bool or nil)", v))
}

// parseValues reads what appendValues wrote.
func parseValues(s string) (Row, error) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, fmt.Errorf("nexmark query: a row %q is not a JSON array", s)
	}
	var row Row
	rest := s[1 : len(s)-1]
	for rest != "" {
		var v any
		var err error
		if rest[0] == '"' {
			var q string
			if q, err = strconv.QuotedPrefix(rest); err == nil {
				rest = rest[len(q):]
				v, err = strconv.Unquote(q)
			}
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			tok := rest[:end]
			rest = rest[end:]
			switch {
			case tok == "null":
			case tok == "true" || tok == "false":
				v = tok == "true"
			case strings.ContainsAny(tok, ".eE") || tok == "NaN":
				v, err = strconv.ParseFloat(tok, 64)
			default:
				v, err = strconv.ParseInt(tok, 10, 64)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("nexmark query: a row %q: %w", s, err)
		}
		row = append(row, v)
		if rest != "" {
			if rest[0] != ',' {
				return nil, fmt.Errorf("nexmark query: a row %q: want a comma at %q", s, rest)
			}
			rest = rest[1:]
		}
	}
	return row, nil
}

var (
	mu      sync.Mutex
	queries = map[string]Query{}
)

// register adds q to the queries; each query's file calls it in init.
func register(q Query) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := queries[q.Name]; dup {
		panic("nexmark query registered twice: " + q.Name)
	}
	queries[q.Name] = q
}

// Lookup returns the query of that name.
func Lookup(name string) (Query, error) {
	mu.Lock()
	defer mu.Unlock()
	if q, ok := queries[name]; ok {
		return q, nil
	}
	return Query{}, fmt.Errorf("no Nexmark query %q (there are: %s)", name, strings.Join(namesLocked(), ", "))
}

// Names returns the queries' names in their order: q0, q1, ..., q22.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := slices.Collect(func(yield func(string) bool) {
		for n := range queries {
			if !yield(n) {
				return
			}
		}
	})
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(names[i], "q"))
		b, _ := strconv.Atoi(strings.TrimPrefix(names[j], "q"))
		return a < b
	})
	return names
}
