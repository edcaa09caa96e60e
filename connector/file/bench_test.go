package file_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/source"
)

type countOutput[T any] struct{ n int }

func (c *countOutput[T]) Collect(T)                     { c.n++ }
func (c *countOutput[T]) CollectWithTimestamp(T, int64) { c.n++ }
func (c *countOutput[T]) CollectBatch(vs []T)           { c.n += len(vs) }
func (c *countOutput[T]) ShouldYield() bool             { return false }

type benchReaderCtx struct{}

func (benchReaderCtx) Subtask() int       { return 0 }
func (benchReaderCtx) Parallelism() int   { return 1 }
func (benchReaderCtx) RequestSplit()      {}
func (benchReaderCtx) Clock() clock.Clock { return clock.System{} }

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
		src := file.TextSource{Path: path}
		splits, err := src.Splits(1)
		if err != nil {
			b.Fatal(err)
		}
		r, err := src.CreateReader(benchReaderCtx{})
		if err != nil {
			b.Fatal(err)
		}
		r.AddSplits(splits)
		r.NoMoreSplits()
		if err := r.Start(); err != nil {
			b.Fatal(err)
		}
		out := &countOutput[string]{}
		for {
			st, _, _, err := r.PollNext(out)
			if err != nil {
				b.Fatal(err)
			}
			if st == source.EndOfInput {
				break
			}
		}
		r.Close()
		if out.n != 200_000 {
			b.Fatalf("%d lines", out.n)
		}
	}
}

var benchLines = func() []string {
	lines := make([]string, 200_000)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the benchmark output", i)
	}
	return lines
}()

// BenchmarkTextSink writes a file of 200,000 short lines per iteration.
func BenchmarkTextSink(b *testing.B) {
	path := filepath.Join(b.TempDir(), "out.txt")
	b.ReportAllocs()
	for b.Loop() {
		w, err := textSink(path).CreateWriter(sinkCtx(0, 1))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range benchLines {
			if err := w.Write(l, math.MinInt64); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Flush(true); err != nil {
			b.Fatal(err)
		}
		w.Close()
	}
}

// BenchmarkSink writes 200,000 short lines per iteration into a part,
// pre-commits and commits it.
func BenchmarkSink(b *testing.B) {
	dir := b.TempDir()
	s := file.Sink[string]{Dir: dir, Format: func(s string) string { return s }}
	c, _ := s.CreateCommitter(sinkCtx(0, 1))
	b.ReportAllocs()
	for b.Loop() {
		w, err := s.CreateWriter(sinkCtx(0, 1))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range benchLines {
			if err := w.Write(l, math.MinInt64); err != nil {
				b.Fatal(err)
			}
		}
		cs, err := w.PrepareCommit()
		if err != nil || len(cs) != 1 {
			b.Fatal(cs, err)
		}
		if err := c.Commit(cs); err != nil {
			b.Fatal(err)
		}
		w.Close()
		os.Remove(filepath.Join(dir, cs[0].Final))
	}
}

func (o *countOutput[T]) ForSplit(string) source.SplitOutput[T] { return countOutputSplit[T]{o} }
func (o *countOutput[T]) ReleaseSplit(string)                   {}

type countOutputSplit[T any] struct{ *countOutput[T] }

func (countOutputSplit[T]) EmitWatermark(int64) {}
func (countOutputSplit[T]) MarkIdle()           {}
