package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"unicode"

	"github.com/weirhq/weir"
)

// WordCount is a word and how often it was seen so far.
type WordCount struct {
	Word  string
	Count int64
}

const sample = `To be, or not to be, that is the question:
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune,
Or to take arms against a sea of troubles
And by opposing end them.`

func main() {
	input := flag.String("input", "", "text file or directory (default: a sample text)")
	output := flag.String("output", "", "file for word<TAB>count lines (default: print the top ten)")
	parallelism := flag.Int("parallelism", 2, "parallelism")
	flag.Parse()

	env := weir.NewEnvironment(weir.Config{Parallelism: *parallelism})
	var lines weir.DataStream[string]
	if *input != "" {
		lines = weir.ReadTextFile(env, *input)
	} else {
		lines = weir.FromSlice(env, strings.Split(sample, "\n"))
	}
	words := weir.FlatMap(lines, func(l string, out weir.Collector[WordCount]) {
		for _, w := range strings.FieldsFunc(strings.ToLower(l), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
			out.Collect(WordCount{Word: w, Count: 1})
		}
	}).Name("split")
	// Reduce emits the running count after every word; in batch mode only
	// the final count per word would come out.
	counts := weir.Reduce(weir.KeyBy(words, func(c WordCount) string { return c.Word }), func(acc, c WordCount) WordCount {
		acc.Count += c.Count
		return acc
	}).Name("count")

	if *output != "" {
		weir.WriteText(counts, *output, func(c WordCount) string { return fmt.Sprintf("%s\t%d", c.Word, c.Count) })
		if _, err := env.Execute(context.Background(), "wordcount"); err != nil {
			log.Fatal(err)
		}
		return
	}
	all, err := weir.ExecuteAndCollect(context.Background(), env, counts, "wordcount")
	if err != nil {
		log.Fatal(err)
	}
	final := map[string]int64{}
	for _, c := range all {
		final[c.Word] = max(final[c.Word], c.Count)
	}
	top := make([]WordCount, 0, len(final))
	for w, n := range final {
		top = append(top, WordCount{w, n})
	}
	slices.SortFunc(top, func(a, b WordCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.Word, b.Word)
	})
	for _, c := range top[:min(10, len(top))] {
		fmt.Printf("%s\t%d\n", c.Word, c.Count)
	}
}
