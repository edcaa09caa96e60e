package jsonline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object reads the JSON object on one line and returns the JSON text of
// each of keys, in their order. what names the object in messages ("not a
// JSON transaction"). Other keys are ignored; a key that is missing, or
// present twice, is an error (a key that differs only in letter case is
// named: keys are case-sensitive).
func Object(text, what string, keys ...string) ([]string, error) {
	if !json.Valid([]byte(text)) {
		return nil, syntaxError(text, what)
	}
	// Valid JSON from here on, so the scanner need not check its syntax.
	sc := scanner{s: text}
	sc.space()
	if text[sc.i] != '{' {
		return nil, fmt.Errorf("not a JSON %s: want an object {%s}, got %s", what, sketch(keys), describe(sc.value()))
	}
	vals := make([]string, len(keys))
	for key, v := range sc.members() {
		i := 0
		for i < len(keys) && keys[i] != key {
			i++
		}
		if i == len(keys) {
			continue // not ours: ignored
		}
		if vals[i] != "" {
			return nil, fmt.Errorf("%q appears twice", key)
		}
		vals[i] = v
	}
	for i, key := range keys {
		if vals[i] != "" {
			continue
		}
		sc := scanner{s: text}
		sc.space()
		for other := range sc.members() {
			if strings.EqualFold(other, key) {
				return nil, fmt.Errorf("no %q (keys are case-sensitive; the line has %q)", key, other)
			}
		}
		return nil, fmt.Errorf("no %q: %.200q", key, text)
	}
	return vals, nil
}

func sketch(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q: ...", k)
	}
	return strings.Join(parts, ", ")
}

// String is the value v of key as a string; it must be a JSON string.
func String(key, v string) (string, error) {
	if v[0] != '"' {
		return "", fmt.Errorf("%q must be a JSON string, got %s", key, describe(v))
	}
	return unquote(v), nil
}

// Float is the value v of key as a float64; it must be a JSON number.
func Float(key, v string) (float64, error) {
	if !isNumber(v) {
		return 0, fmt.Errorf("%q must be a JSON number, got %s", key, describe(v))
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%q %s is out of range", key, clip(v))
	}
	return f, nil
}

// Int is the value v of key as an int64; it must be a JSON number written
// as an integer. unit ("milliseconds", or "") is named in messages.
func Int(key, v, unit string) (int64, error) {
	what, rangeUnit := "integer", ""
	if unit != "" {
		what, rangeUnit = "integer number of "+unit, unit+" "
	}
	if !isNumber(v) {
		return 0, fmt.Errorf("%q must be a JSON %s, got %s", key, what, describe(v))
	}
	if strings.ContainsAny(v, ".eE") {
		return 0, fmt.Errorf("%q %s is not an %s (write it without fraction or exponent)", key, clip(v), what)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q %s is out of range (%sfrom %d to %d)", key, clip(v), rangeUnit, int64(math.MinInt64), int64(math.MaxInt64))
	}
	return n, nil
}

// syntaxError explains why text is not valid JSON.
func syntaxError(text, what string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("not a JSON %s: the line is blank", what)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	var v json.RawMessage
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return fmt.Errorf("not a JSON %s: more after the object's closing brace: %.200q", what, text)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("not a JSON %s: the line ends inside the JSON: %.200q", what, text)
	case errors.As(err, &se):
		return fmt.Errorf("not a JSON %s: %s (at byte %d): %.200q", what, se.Error(), se.Offset, text)
	}
	return fmt.Errorf("not a JSON %s: %.200q", what, text)
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
