package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/internal/operator"
)

type countInput[T any] struct{ n int }

func (c *countInput[T]) ProcessElement(T, int64) { c.n++ }
func (c *countInput[T]) ProcessWatermark(int64)  {}

// BenchmarkTextSource reads a file of 200,000 short lines per iteration.
func BenchmarkTextSource(b *testing.B) {
	path := filepath.Join(b.TempDir(), "in.txt")
	var sb strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&sb, "line %d of the benchmark input\n", i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r := file.TextSource{Path: path}.NewReader()
		ctx := operator.NewContext(new(int), 0)
		ctx.Subtask, ctx.Parallelism, ctx.Clock = 0, 1, clock.System{}
		if err := r.Open(ctx); err != nil {
			b.Fatal(err)
		}
		in := &countInput[string]{}
		for {
			st, _, _, err := r.Poll(in)
			if err != nil {
				b.Fatal(err)
			}
			if st == operator.EndOfInput {
				break
			}
		}
		r.Close()
		if in.n != 200_000 {
			b.Fatalf("%d lines", in.n)
		}
	}
}
