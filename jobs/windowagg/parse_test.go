package windowagg_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/jsonline"
	"github.com/weirhq/weir/jobs/windowagg"
)

func TestParseErrorsNameFileLineAndValue(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"ts": "5", "key": "a", "value": 1}`, `in.jsonl line 7: "ts" must be a JSON integer number of milliseconds, got string "5"`},
		{`{"ts": 5, "key": 3, "value": 1}`, `in.jsonl line 7: "key" must be a JSON string, got number 3`},
		{`{"ts": 5, "key": "a", "value": 1.5}`, `in.jsonl line 7: "value" 1.5 is not an integer (write it without fraction or exponent)`},
		{`{"ts": 5, "Key": "a", "value": 1}`, `in.jsonl line 7: no "key" (keys are case-sensitive; the line has "Key")`},
		{``, `in.jsonl line 7: not a JSON event: the line is blank`},
		{`{"ts": 5, "key": "a"}`, `in.jsonl line 7: no "value"`},
	} {
		_, err := windowagg.Parse(file.Line{Path: "in.jsonl", Number: 7, Text: c.text})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	e, err := windowagg.Parse(file.Line{Path: "in.jsonl", Number: 1, Text: `{"value": -3, "other": [1], "key": "k\u00e9", "ts": -20}`})
	if err != nil || e.TS != -20 || e.Key != "ké" || e.Value != -3 {
		t.Fatalf("got %+v, %v", e, err)
	}
}

// Parse agrees with encoding/json on every line: it accepts exactly the
// objects whose three keys appear once each with the right JSON types, and
// reads the same values; it never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"ts": 1, "key": "a", "value": 2}`,
		`{"ts": -1, "key": "a\"\\\u00e9", "value": 0, "x": [1, {"y": "]}"}]}`,
		`{"ts": 1, "ts": 2, "key": "a", "value": 2}`,
		`{"TS": 1, "key": "a", "value": 2}`,
		`{"ts": 1e3, "key": "a", "value": 2}`,
		`[1]`, `"s"`, `12`, `null`, `{`, `{}`, ` `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		e, err := windowagg.Parse(file.Line{Path: "f", Number: 1, Text: text})
		var want windowagg.Event
		vals, ok := jsonline.Reference(text, "ts", "key", "value")
		if ok {
			var okKey, okTS, okVal bool
			want.Key, okKey = vals["key"].(string)
			want.TS, okTS = integer(vals["ts"])
			want.Value, okVal = integer(vals["value"])
			ok = okKey && okTS && okVal
		}
		if ok != (err == nil) {
			t.Fatalf("%q: Parse error %v, but encoding/json says valid=%v", text, err, ok)
		}
		want.Text = text
		if ok && utf8.ValidString(text) && e != want {
			t.Fatalf("%q: Parse = %+v, encoding/json reads %+v", text, e, want)
		}
	})
}

// integer is a JSON number written as an int64 (no fraction or exponent).
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}
