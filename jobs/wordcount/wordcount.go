package wordcount

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weirhq/weir"
)

// WordCount is one word and how often it occurred.
type WordCount struct {
	Word  string
	Count int64
}

// Options configure a run.
type Options struct {
	// Input is a file or directory; "" counts the built-in sample text.
	Input string
	// Output is the file to write; "" prints the top 20 words to Stdout.
	Output      string
	Parallelism int
	Stdout      io.Writer
	Config      weir.Config // base configuration (Parallelism and Mode are set from here)
}

// Tokenize calls emit for every word of line: lower-cased, split on runs of
// characters that are neither letters nor digits.
func Tokenize(line string, emit func(string)) {
	// Most text is ASCII: there the letters and digits are [A-Za-z0-9] and
	// lower-casing maps only A-Z, so one byte table replaces decoding runes
	// and the Unicode tables, with the same words.
	ascii, upper := asciiUpper(line)
	if !ascii {
		tokenizeUnicode(line, emit)
		return
	}
	lower := line
	if upper {
		lower = strings.ToLower(line)
	}
	start := -1
	for i := 0; i < len(lower); i++ {
		word := asciiWord[lower[i]]
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			emit(lower[start:i])
			start = -1
		}
	}
	if start >= 0 {
		emit(lower[start:])
	}
}

// asciiUpper reports whether s is all ASCII and, if so, whether it holds a
// capital A-Z. It looks at 8 bytes at a time without a branch per byte: for
// a byte b < 0x80, b+0x3F has its top bit set when b >= 'A', b+0x25 when
// b > 'Z', and neither sum carries into the next byte.
func asciiUpper(s string) (ascii, upper bool) {
	const hi = 0x8080808080808080
	var up uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if x&hi != 0 {
			return false, false
		}
		up |= (x + 0x3F3F3F3F3F3F3F3F) &^ (x + 0x2525252525252525)
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return false, false
		}
		if 'A' <= c && c <= 'Z' {
			up |= hi
		}
	}
	return true, up&hi != 0
}

// asciiWord marks the ASCII bytes that are letters or digits.
var asciiWord = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
	}
	return t
}()

func tokenizeUnicode(line string, emit func(string)) {
	lower := strings.ToLower(line)
	start := -1
	for i, r := range lower {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			emit(lower[start:i])
			start = -1
		}
	}
	if start >= 0 {
		emit(lower[start:])
	}
}

// Build declares the job on env and returns the stream of final counts.
func Build(env *weir.Environment, lines weir.DataStream[string]) weir.DataStream[WordCount] {
	words := weir.FlatMap(lines, func(line string, out weir.Collector[WordCount]) {
		Tokenize(line, func(w string) { out.Collect(WordCount{Word: w, Count: 1}) })
	}).Name("Tokenize")
	keyed := weir.KeyBy(words, func(w WordCount) string { return w.Word })
	return weir.Reduce(keyed, func(a, b WordCount) WordCount {
		a.Count += b.Count
		return a
	}).Name("Count")
}

// Format renders a count as an output line.
func Format(wc WordCount) string { return wc.Word + "\t" + fmt.Sprint(wc.Count) }

// Run runs the job. It runs in batch mode: the input is bounded, and only the
// final count of each word is written.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if o.Parallelism > 0 {
		cfg.Parallelism = o.Parallelism
	}
	cfg.Mode = weir.Batch
	env := weir.NewEnvironment(cfg)
	var lines weir.DataStream[string]
	if o.Input == "" {
		lines = weir.FromSlice(env, strings.Split(SampleText, "\n")).Name("Source: sample text")
	} else {
		lines = weir.ReadTextFile(env, o.Input)
	}
	counts := Build(env, lines)
	if o.Output != "" {
		weir.WriteText(counts, o.Output, Format).SetParallelism(1)
		_, err := env.Execute(ctx, "wordcount")
		return err
	}
	all, err := weir.ExecuteAndCollect(ctx, env, counts, "wordcount")
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b WordCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Word, b.Word))
	})
	for _, wc := range all[:min(20, len(all))] {
		fmt.Fprintln(o.Stdout, Format(wc))
	}
	return nil
}
