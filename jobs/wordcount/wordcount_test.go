package wordcount_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/weirhq/weir/internal/testseed"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/weirhq/weir/jobs/wordcount"
)

func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

// pieces of text the generator mixes: words of several scripts, digits,
// punctuation and separators that are not letters or digits.
var (
	words = []string{"the", "The", "THE", "weir", "Flink", "stream", "état", "ÉTAT", "straße", "日本語", "данные",
		"x1", "2026", "١٢٣", "a", "I", "ǅemal", "ﬁne", "ΣΊΣΥΦΟΣ", "naïve", "o'clock", "e-mail", "x_y"}
	seps = []string{" ", "  ", ", ", ". ", "\t", "—", "!?", " (", ") ", "_", "''", "\u00a0", "\u2028", "·"}
)

// reference counts words with the simplest possible scan: one rune at a time
// over the whole lower-cased text, without the engine.
func reference(text string) map[string]int64 {
	counts := map[string]int64{}
	var cur []rune
	for _, r := range strings.ToLower(text) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			cur = append(cur, r)
			continue
		}
		if len(cur) > 0 {
			counts[string(cur)]++
			cur = cur[:0]
		}
	}
	if len(cur) > 0 {
		counts[string(cur)]++
	}
	return counts
}

func randomText(rng *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		n := rng.IntN(30)
		if rng.IntN(50) == 0 {
			n = rng.IntN(20000) // a long line spanning network buffers and splits
		}
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		if rng.IntN(10) == 0 {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func readCounts(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		word, n, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("line %q has no tab", sc.Text())
		}
		c, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[word]; dup {
			t.Fatalf("word %q written twice", word)
		}
		got[word] = c
	}
	return got
}

func TestWordcountMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	size := 3 << 20
	if testing.Short() {
		size = 256 << 10
	}
	text := randomText(rng, size)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := reference(text)
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("parallelism=%d", p), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("out-%d.txt", p))
			err := wordcount.Run(context.Background(), wordcount.Options{Input: in, Output: out, Parallelism: p})
			if err != nil {
				t.Fatal(err)
			}
			got := readCounts(t, out)
			if len(got) != len(want) {
				t.Errorf("%d distinct words, want %d", len(got), len(want))
			}
			for w, n := range want {
				if got[w] != n {
					t.Errorf("word %q: count %d, want %d", w, got[w], n)
				}
			}
		})
	}
}

// TestTokenizeMatchesReference: Tokenize (with its ASCII path) gives the
// reference scan's words, in order, on random lines of ASCII only and mixed
// scripts, with and without capitals.
func TestTokenizeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(3) == 0 {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteString(seps[rng.IntN(len(seps))])
				continue
			}
			for range rng.IntN(8) {
				b.WriteByte(byte(rng.IntN(128)))
			}
		}
		line := b.String()
		var want []string
		var cur []rune
		for _, r := range strings.ToLower(line) {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				cur = append(cur, r)
				continue
			}
			if len(cur) > 0 {
				want = append(want, string(cur))
				cur = cur[:0]
			}
		}
		if len(cur) > 0 {
			want = append(want, string(cur))
		}
		var got []string
		wordcount.Tokenize(line, func(w string) { got = append(got, w) })
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("Tokenize(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"  a--b  ", []string{"a", "b"}},
		{"x1y2 3", []string{"x1y2", "3"}},
		{"o'clock e-mail", []string{"o", "clock", "e", "mail"}},
		{"Straße ÉTAT", []string{"straße", "état"}},
		{"日本語、データ", []string{"日本語", "データ"}},
	} {
		var got []string
		wordcount.Tokenize(tc.in, func(w string) { got = append(got, w) })
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSampleTopWords(t *testing.T) {
	var b strings.Builder
	if err := wordcount.Run(context.Background(), wordcount.Options{Stdout: &b, Parallelism: 2}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20:\n%s", len(lines), b.String())
	}
	want := reference(wordcount.SampleText)
	if lines[0] != "the\t"+strconv.FormatInt(want["the"], 10) {
		t.Errorf("top word line %q, want the\\t%d", lines[0], want["the"])
	}
}
