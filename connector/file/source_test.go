package file_test

import (
	"fmt"
	"github.com/weirhq/weir/internal/testseed"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/clock"
	"github.com/weirhq/weir/internal/operator"
)

type recorder struct{ lines []string }

func (r *recorder) ProcessElement(v string, _ int64) { r.lines = append(r.lines, v) }
func (r *recorder) ProcessWatermark(int64)           {}

func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

// readAll runs every subtask's reader of the source and returns all lines.
func readAll(t *testing.T, src file.TextSource, p int) []string {
	var all []string
	for i := range p {
		r := src.NewReader()
		ctx := operator.NewContext(new(int), 0)
		ctx.Subtask, ctx.Parallelism, ctx.Clock = i, p, clock.System{}
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		for {
			st, _, _, err := r.Poll(rec)
			if err != nil {
				t.Fatal(err)
			}
			if st == operator.EndOfInput {
				break
			}
		}
		r.Close()
		all = append(all, rec.lines...)
	}
	return all
}

// Every line is read exactly once whatever the split size and parallelism,
// including lines that cross split boundaries and lines longer than a split.
func TestSplitsCoverEveryLineOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	dir := t.TempDir()
	var want []string
	for f := range 3 {
		var b strings.Builder
		for i := range rng.IntN(1500) {
			line := fmt.Sprintf("f%d-l%d-%s", f, i, strings.Repeat("x", rng.IntN(3)*rng.IntN(400)))
			if rng.IntN(20) == 0 {
				line = ""
			}
			want = append(want, line)
			b.WriteString(line)
			if rng.IntN(4) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		if rng.IntN(2) == 0 { // no final newline
			want = append(want, fmt.Sprintf("f%d-tail", f))
			b.WriteString(fmt.Sprintf("f%d-tail", f))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("not me\n"), 0o644)
	slices.Sort(want)
	for _, splitSize := range []int64{97, 4096, 1 << 20, 0} {
		for _, p := range []int{1, 2, 3, 4} {
			got := readAll(t, file.TextSource{Path: dir, SplitSize: splitSize}, p)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("split size %d, parallelism %d: %d lines, want %d", splitSize, p, len(got), len(want))
			}
		}
	}
}
