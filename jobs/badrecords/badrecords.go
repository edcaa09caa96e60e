package badrecords

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/failure"
)

// Policy says what a record that cannot be parsed does.
type Policy int

const (
	// Fail ends the job at once with an error naming the record's origin.
	Fail Policy = iota
	// Skip drops the record and counts it.
	Skip
	// DeadLetter writes the record to the dead-letter output (DeadLetter
	// lines) and counts it.
	DeadLetter
)

// MetricName is the parsing operator's counter of skipped and
// dead-lettered records.
const MetricName = "numBadRecords"

// ParsePolicy reads "fail", "skip" or "dead-letter" ("" is fail).
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "fail":
		return Fail, nil
	case "skip":
		return Skip, nil
	case "dead-letter":
		return DeadLetter, nil
	}
	return Fail, fmt.Errorf("bad-record policy %q: want fail, skip or dead-letter", s)
}

func (p Policy) String() string {
	switch p {
	case Fail:
		return "fail"
	case Skip:
		return "skip"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// CheckTarget checks that a dead-letter target (named field in errors) is
// given with DeadLetter and only with it.
func CheckTarget(p Policy, target, field string) error {
	switch {
	case p == DeadLetter && target == "":
		return fmt.Errorf("the bad-record policy dead-letter needs %s", field)
	case p != DeadLetter && target != "":
		return fmt.Errorf("%s %q is set, but the bad-record policy is %s, not dead-letter", field, target, p)
	}
	return nil
}

// Blank reports whether text is empty or only whitespace: such lines are
// skipped, not bad.
func Blank(text string) bool { return strings.TrimSpace(text) == "" }

// Line is one dead-letter line: a JSON object with the record's origin
// ("file:line" or "topic/partition/offset"), why it was bad, and the record
// as read:
//
//	{"source":"in.txt:3","error":"want key<TAB>value, got \"x\"","record":"x"}
func Line(source string, reason error, record string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<TAB>" stays readable
	enc.Encode(struct {
		Source string `json:"source"`
		Error  string `json:"error"`
		Record string `json:"record"`
	}{source, reason.Error(), record})
	return strings.TrimSuffix(b.String(), "\n")
}

// FailError is the error of a bad record under the Fail policy: where and
// why, permanent, and the flag that goes on past bad records.
func FailError(where string, reason error) error {
	return failure.Permanent(fmt.Errorf("%s: %w (a bad record fails the job; --bad-records skip or dead-letter goes on past it)", where, reason))
}

// DeadLetters is the side output of the parsing operator that Lines
// declares: one Line per dead-lettered record.
var DeadLetters = weir.NewOutputTag[string]("dead-letters")

// Handler applies a policy to the bad records of a parsing function: embed
// it, call Open in the function's Open and Bad for each bad record.
type Handler struct {
	Policy Policy
	bad    weir.Counter
}

// Open registers the numBadRecords counter.
func (h *Handler) Open(ctx weir.RuntimeContext) error {
	h.bad = weir.MetricCounter(ctx, MetricName)
	return nil
}

// Bad handles one bad record: source is its origin in a dead letter
// ("file:line", "topic/partition/offset"), where the same in an error
// message, reason what is wrong, record the record as read. The error, under
// Fail, ends the job.
func (h *Handler) Bad(ctx weir.Context, source, where string, reason error, record string) error {
	switch h.Policy {
	case Skip:
		h.bad.Inc()
	case DeadLetter:
		h.bad.Inc()
		DeadLetters.Output(ctx, Line(source, reason, record))
	default:
		return FailError(where, reason)
	}
	return nil
}

// parser is the parsing operator's function of Lines.
type parser[T any] struct {
	Handler
	parse func(l file.Line) (T, error)
}

func (p *parser[T]) ProcessElement(ctx weir.Context, l file.Line, out weir.Collector[T]) error {
	if Blank(l.Text) {
		return nil
	}
	v, err := p.parse(l)
	if err != nil {
		return p.Bad(ctx, fmt.Sprintf("%s:%d", l.Path, l.Number), fmt.Sprintf("%s line %d", l.Path, l.Number), err, l.Text)
	}
	out.Collect(v)
	return nil
}

// Lines is the parsing operator of a job over file lines: parse reads one
// line (its error says what is wrong, not where: Lines adds that); blank
// lines are skipped; a line parse rejects is handled by policy. With
// DeadLetter, weir.SideOutput(result, DeadLetters) is the stream of dead
// letters.
func Lines[T any](lines weir.DataStream[file.Line], policy Policy, parse func(l file.Line) (T, error)) weir.DataStream[T] {
	return weir.Process[file.Line, T](lines, &parser[T]{Handler: Handler{Policy: policy}, parse: parse})
}
