package jsonline

import (
	"encoding/json"
	"io"
	"strings"
)

// Reference decodes text with encoding/json, independently of Object, for
// the fuzz tests of the jobs' parsers: the values of keys (strings as
// string, numbers as json.Number), and false unless text is one JSON object
// in which each of keys appears exactly once. Other keys are ignored.
func Reference(text string, keys ...string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	vals := map[string]any{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		key := k.(string)
		wanted := false
		for _, w := range keys {
			wanted = wanted || w == key
		}
		if !wanted {
			continue
		}
		if _, dup := vals[key]; dup {
			return nil, false
		}
		vals[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return vals, len(vals) == len(keys)
}
