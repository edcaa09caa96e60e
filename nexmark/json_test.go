package nexmark

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestJSONRoundTrip writes generated events and reads them back, and
// checks that every line is valid JSON with the type's keys.
func TestJSONRoundTrip(t *testing.T) {
	g := mustGenerator(t, DefaultConfig())
	var buf []byte
	var events []Event
	for n := range int64(2000) {
		var e Event
		g.Event(n, &e)
		events = append(events, e)
		buf = AppendJSON(buf, &e)
	}
	d := NewDecoder(strings.NewReader(string(buf)))
	for i, want := range events {
		var got Event
		if err := d.Next(&got); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got != want {
			t.Fatalf("event %d: read %+v, wrote %+v", i, got, want)
		}
	}
	var e Event
	if err := d.Next(&e); err != io.EOF {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		keys := map[string][]string{"person": personKeys, "auction": auctionKeys, "bid": bidKeys}[m["type"].(string)]
		if len(m) != len(keys)+1 {
			t.Fatalf("line %d has keys %v, want type and %v", i+1, m, keys)
		}
	}
}

func TestDecoderErrors(t *testing.T) {
	good := `{"type":"bid","auction":1000,"bidder":2001,"price":5,"channel":"Google","url":"u","dateTime":1,"extra":""}`
	for _, c := range []struct{ in, want string }{
		{good + "\n" + `{"type":"bid"}`, `line 2: no "auction"`},
		{good + "\n\n", "line 2: not a JSON Nexmark event: the line is blank"},
		{`{"type":"bids"}`, `line 1: "type" must be "person", "auction" or "bid"`},
		{`{"type":5}`, `line 1: "type" must be a JSON string`},
		{`[1]`, "line 1: not a JSON Nexmark event"},
		{`{"type":"bid",`, "line 1: not a JSON Nexmark event: the line ends inside the JSON"},
		{strings.Replace(good, `"price":5`, `"price":5.5`, 1), `line 1: "price" 5.5 is not an integer`},
		{strings.Replace(good, `"price":5`, `"price":"5"`, 1), `line 1: "price" must be a JSON integer`},
		{strings.Replace(good, `"dateTime":1`, `"dateTime":1e3`, 1), `"dateTime" 1e3 is not an integer number of milliseconds`},
		{strings.Replace(good, `"url":"u"`, `"url":"u","URL":"v"`, 1), `line 1: a bid has no key "URL"`},
		{strings.Replace(good, `"extra":""`, `"extra":"","extra":""`, 1), `line 1: "extra" appears twice`},
		{strings.Replace(good, `"extra":""`, "\"extra\":\"\x80\"", 1), `line 1: not valid UTF-8 (byte 105 is 0x80)`},
	} {
		d := NewDecoder(strings.NewReader(c.in))
		var err error
		var e Event
		for err == nil {
			err = d.Next(&e)
		}
		if err == io.EOF || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80q: got %v, want an error with %q", c.in, err, c.want)
		}
	}
	long := strings.Repeat("x", maxLine+1)
	if err := NewDecoder(strings.NewReader(good + "\n" + long)).Next(new(Event)); err != nil {
		t.Fatalf("the good first line: %v", err)
	}
	d := NewDecoder(strings.NewReader(good + "\n" + long))
	var e Event
	d.Next(&e)
	if err := d.Next(&e); err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Errorf("a too long line: %v", err)
	}
}

// FuzzDecodeLine checks that any line either fails with an error or
// decodes to an event that AppendJSON writes back as a line decoding to
// the same event, and that a decoded line is valid JSON.
func FuzzDecodeLine(f *testing.F) {
	g := mustGenerator(f, DefaultConfig())
	var e Event
	for n := range int64(60) {
		g.Event(n, &e)
		f.Add(strings.TrimSuffix(string(AppendJSON(nil, &e)), "\n"))
	}
	f.Add(`{"type":"person","id":1,"name":"a\"b\\c\u0001\u00e9","emailAddress":"","creditCard":"","city":"","state":"","dateTime":-5,"extra":"\ud800"}`)
	f.Add(`{"type":"bid"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, line string) {
		var e Event
		err := DecodeLine(line, &e)
		if err != nil {
			if e != (Event{}) {
				t.Fatalf("a failed decode left %+v", e)
			}
			return
		}
		if !json.Valid([]byte(line)) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		out := AppendJSON(nil, &e)
		var again Event
		if err := DecodeLine(strings.TrimSuffix(string(out), "\n"), &again); err != nil {
			t.Fatalf("%q decoded to %+v, written as %q, which fails: %v", line, e, out, err)
		}
		if again != e {
			t.Fatalf("%q: %+v written and read back as %+v", line, e, again)
		}
	})
}
