package frauddetection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/jsonline"
	"github.com/weirhq/weir/jobs/frauddetection"
	"go.uber.org/goleak"
)

// goInternals are signs of a message that shows Go types instead of saying
// what is wrong with the input.
var goInternals = []string{"Go struct", "of type", "json: cannot unmarshal", "*json.", "%!"}

// Every way a line can be wrong gets a message naming the file, the line
// and what is wrong, in the input's terms.
func TestParseIsStrict(t *testing.T) {
	for _, tc := range []struct{ line, err string }{
		// Valid, with keys in any order and unknown keys ignored.
		{`{"ts": 10, "amount": 600, "account": "x"}`, ""},
		{`{"account": "x", "amount": -0.5e2, "ts": -9223372036854775808, "note": {"a": [1, {"b": null}]}, "n": 1}`, ""},
		{` {"account":"","amount":0,"ts":0} `, ""},
		// Key names are exact.
		{`{"Account": "x", "amount": 1, "ts": 1}`, `no "account" (keys are case-sensitive; the line has "Account")`},
		{`{"account": "x", "AMOUNT": 1, "ts": 1}`, `no "amount" (keys are case-sensitive; the line has "AMOUNT")`},
		{`{"account": "x", "amount": 1}`, `no "ts"`},
		// Types are exact.
		{`{"account": 42, "amount": 1, "ts": 1}`, `"account" must be a JSON string, got number 42`},
		{`{"account": null, "amount": 1, "ts": 1}`, `"account" must be a JSON string, got null`},
		{`{"account": "x", "amount": "600", "ts": 1}`, `"amount" must be a JSON number, got string "600"`},
		{`{"account": "x", "amount": true, "ts": 1}`, `"amount" must be a JSON number, got boolean true`},
		{`{"account": "x", "amount": [600], "ts": 1}`, `"amount" must be a JSON number, got an array`},
		{`{"account": "x", "amount": {"v": 600}, "ts": 1}`, `"amount" must be a JSON number, got an object`},
		{`{"account": "x", "amount": 1e400, "ts": 1}`, `"amount" 1e400 is out of range`},
		{`{"account": "x", "amount": 1, "ts": "1"}`, `"ts" must be a JSON integer number of milliseconds, got string "1"`},
		{`{"account": "x", "amount": 1, "ts": 1.5}`, `"ts" 1.5 is not an integer number of milliseconds`},
		{`{"account": "x", "amount": 1, "ts": 1e3}`, `"ts" 1e3 is not an integer number of milliseconds`},
		{`{"account": "x", "amount": 1, "ts": 9223372036854775808}`, `"ts" 9223372036854775808 is out of range`},
		// One value per key.
		{`{"account": "x", "amount": 1, "amount": 700, "ts": 1}`, `"amount" appears twice`},
		// One object per line.
		{`[{"account": "x", "amount": 1, "ts": 1}]`, `not a JSON transaction: want an object`},
		{`"x"`, `not a JSON transaction: want an object {"account": ..., "amount": ..., "ts": ...}, got string "x"`},
		{`{"account": "x", "amount": 1, "ts": 1} {}`, `not a JSON transaction: more after the object's closing brace`},
		{`{"account": "x", "amount": 1, "ts": 1`, `not a JSON transaction: the line ends inside the JSON`},
		{`{"account": "x", "amount": 01, "ts": 1}`, `not a JSON transaction: invalid character '1' after object key:value pair`},
		{`nope`, `not a JSON transaction: invalid character 'o' in literal null`},
		{`   `, `not a JSON transaction: the line is blank`},
	} {
		_, err := frauddetection.Parse(file.Line{Path: "tx.jsonl", Number: 3, Text: tc.line})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%s) = %v, want no error", tc.line, err)
		case tc.err == "":
		case err == nil || !strings.HasPrefix(err.Error(), "tx.jsonl line 3: "+tc.err):
			t.Errorf("Parse(%s) = %v,\n\twant an error starting %q", tc.line, err, "tx.jsonl line 3: "+tc.err)
		default:
			for _, bad := range goInternals {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("Parse(%s): %q shows %q", tc.line, err, bad)
				}
			}
		}
	}
	tx, err := frauddetection.Parse(file.Line{Path: "tx.jsonl", Number: 3, Text: `{"account": "a\u00e9\"", "amount": 600.25, "ts": 1700000000123}`})
	if want := (frauddetection.Transaction{Account: "aé\"", Amount: 600.25, TS: 1700000000123, Line: 3}); err != nil || tx != want {
		t.Fatalf("Parse = %+v, %v; want %+v", tx, err, want)
	}
}

// Blank lines (empty or whitespace, with either line ending) are skipped.
func TestBlankLinesAreSkipped(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "tx.jsonl")
	os.WriteFile(in, []byte("\n"+
		`{"account": "a", "amount": 0.5, "ts": 1000}`+"\n"+
		"   \t \r\n"+
		"\r\n"+
		`{"account": "a", "amount": 600, "ts": 2000}`+"\n"+
		"  "), 0o644)
	out := filepath.Join(dir, "alerts.jsonl")
	if err := frauddetection.Run(context.Background(), frauddetection.Options{Input: in, Output: out}); err != nil {
		t.Fatal(err)
	}
	if got := readAlerts(t, out); !slices.Equal(got, []string{"a/2000/600"}) {
		t.Fatalf("alerts %v", got)
	}
}

// With a directory of inputs, an error names the file the bad line is in
// and its number in that file; files are read in name order.
func TestErrorNamesFileAndLineInDirectory(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	good := `{"account": "a", "amount": 0.5, "ts": 1}` + "\n"
	os.WriteFile(filepath.Join(in, "a.jsonl"), []byte(strings.Repeat(good, 5)), 0o644)
	os.WriteFile(filepath.Join(in, "b.jsonl"), []byte(good+"\n"+`{"account": "a", "amount": "600", "ts": 2}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(in, "c.jsonl"), []byte("bad too\n"), 0o644)
	for _, p := range []int{1, 3} {
		err := frauddetection.Run(context.Background(), frauddetection.Options{Input: in, Output: filepath.Join(dir, "out"), Parallelism: p})
		want := filepath.Join(in, "b.jsonl") + ` line 3: "amount" must be a JSON number, got string "600"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("parallelism %d: got %v, want an error containing %q", p, err, want)
		}
	}
}

// Standard input and output ("-") work end to end.
func TestStdinToStdout(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	err := frauddetection.Run(context.Background(), frauddetection.Options{
		Input: "-", Output: "-", Parallelism: 2, Stdout: &out,
		Stdin: strings.NewReader(`{"account": "a", "amount": 0.5, "ts": 1000}` + "\n" + `{"account": "a", "amount": 600, "ts": 2000}` + "\n" + `{"account": "a", "amount": "x", "ts": 3000}`),
	})
	if err == nil || !strings.Contains(err.Error(), `stdin line 3: "amount" must be a JSON number, got string "x"`) {
		t.Fatalf("got %v", err)
	}
	out.Reset()
	err = frauddetection.Run(context.Background(), frauddetection.Options{
		Input: "-", Output: "-", Parallelism: 2, Stdout: &out,
		Stdin: strings.NewReader(`{"account": "a", "amount": 0.5, "ts": 1000}` + "\n" + `{"account": "a", "amount": 600, "ts": 2000}` + "\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), `{"account": "a", "ts": 2000, "amount": 600}`+"\n"; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

// A small transaction at the first instant of int64 time and a large one
// at 0 are 2^63 ms apart, not within the minute: ts-prev must not overflow.
func TestFarApartTransactionsDoNotAlert(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "tx.jsonl")
	os.WriteFile(in, []byte(`{"account": "a", "amount": 0.5, "ts": -9223372036854775808}
{"account": "a", "amount": 600, "ts": 0}
{"account": "b", "amount": 0.5, "ts": -9223372036854775808}
{"account": "b", "amount": 600, "ts": 9223372036854775807}
{"account": "c", "amount": 0.5, "ts": -9223372036854775808}
{"account": "c", "amount": 600, "ts": -9223372036854715808}
`), 0o644)
	out := filepath.Join(dir, "alerts.jsonl")
	if err := frauddetection.Run(context.Background(), frauddetection.Options{Input: in, Output: out, Parallelism: 2}); err != nil {
		t.Fatal(err)
	}
	if got := readAlerts(t, out); !slices.Equal(got, []string{"c/-9223372036854715808/600"}) {
		t.Fatalf("alerts %v, want only c's (exactly one minute apart)", got)
	}
}

// A small transaction so late in int64 time that its cleanup time ts+Window
// does not fit must keep its state until the end of time: the timer
// saturates at math.MaxInt64 instead of wrapping to the distant past and
// firing at the next watermark.
func TestCleanupTimerSaturates(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	small := int64(math.MaxInt64 - 100)
	script := []string{
		`{"account": "a", "amount": 0.5, "ts": 9223372036854775707}`,
		`{"account": "a", "amount": 600, "ts": 9223372036854775757}`,
	}
	// At 3 lines a second the second comes 333 ms after the first: watermarks
	// (every ms) pass the detector between the two.
	lines := weir.Generate(env, int64(len(script)), 3, func(i int64) file.Line {
		return file.Line{Path: "script", Number: i + 1, Text: script[i]}
	}).SetParallelism(1)
	alerts, err := weir.ExecuteAndCollect(context.Background(), env, frauddetection.Build(env, lines, 0, time.Millisecond), "saturate")
	if err != nil {
		t.Fatal(err)
	}
	if want := []frauddetection.Alert{{Account: "a", TS: small + 50, Amount: 600}}; !slices.Equal(alerts, want) {
		t.Fatalf("alerts %v, want %v", alerts, want)
	}
}

func BenchmarkParse(b *testing.B) {
	l := file.Line{Path: "tx.jsonl", Number: 1, Text: `{"account": "acc-123", "amount": 512.25, "ts": 1700000001234}`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := frauddetection.Parse(l); err != nil {
			b.Fatal(err)
		}
	}
}

// Parse agrees with encoding/json on every line: it accepts exactly the
// JSON objects whose three keys appear once each with the right types, and
// reads the same values; it never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"account": "x", "amount": 1.5, "ts": 10}`,
		`{"ts": -1, "amount": -0.0, "account": "a\"\\\u00e9", "x": [1, {"y": "]}"}]}`,
		`{"account": "x", "amount": 1, "amount": 2, "ts": 1}`,
		`{"Account": "x", "amount": 1, "ts": 1}`,
		`{"account": "x", "amount": "1", "ts": 1e3}`,
		`[1]`, `"s"`, `12`, `null`, `{`, `{}`, ` `, `{"a":{}}`,
		`{"acc\u006funt": "x", "amount": 1, "ts": 1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tx, err := frauddetection.Parse(file.Line{Path: "f", Number: 1, Text: text})
		for _, bad := range goInternals {
			if err != nil && strings.Contains(err.Error(), bad) && !strings.Contains(text, bad) {
				t.Fatalf("%q: %q shows %q", text, err, bad)
			}
		}
		// The reference: encoding/json, seeing duplicate keys.
		var want frauddetection.Transaction
		vals, ok := jsonline.Reference(text, "account", "amount", "ts")
		if ok {
			var okAcc bool
			want.Account, okAcc = vals["account"].(string)
			amount, okAmount := vals["amount"].(json.Number)
			if okAmount {
				a, err := strconv.ParseFloat(string(amount), 64)
				want.Amount, okAmount = a, err == nil
			}
			ts, okTS := vals["ts"].(json.Number)
			if okTS && !strings.ContainsAny(string(ts), ".eE") {
				n, err := strconv.ParseInt(string(ts), 10, 64)
				want.TS, okTS = n, err == nil
			} else {
				okTS = false
			}
			ok = okAcc && okAmount && okTS
		}
		want.Line = 1
		if ok != (err == nil) {
			t.Fatalf("%q: Parse error %v, but encoding/json says valid=%v", text, err, ok)
		}
		if ok && utf8.ValidString(text) && tx != want && !(math.IsNaN(tx.Amount) && math.IsNaN(want.Amount)) {
			t.Fatalf("%q: Parse = %+v, encoding/json reads %+v", text, tx, want)
		}
	})
}
