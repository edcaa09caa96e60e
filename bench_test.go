package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/jobs/wordcount"
	"github.com/weirhq/weir/tuple"
)

// The engine benchmarks run one job of b.N records per benchmark round and
// report events per second per core of CPU time used by the whole process
// (all subtasks), as Nexmark does. Compare with bench/baseline.

func execute(b *testing.B, env *weir.Environment) {
	b.Helper()
	if _, err := env.Execute(context.Background(), b.Name()); err != nil {
		b.Fatal(err)
	}
}

// (a) generator -> map -> filter -> discard, chained into one task.
func BenchmarkChainedMapFilter(b *testing.B) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	src := weir.Sequence(env, 0, int64(b.N)-1)
	m := weir.Map(src, func(v int64) int64 { return v*3 + 1 })
	f := weir.Filter(m, func(v int64) bool { return v%5 != 0 })
	weir.Discard(f)
	b.ResetTimer()
	start := cpumeter.Now()
	execute(b, env)
	cpumeter.Report(b, int64(b.N), start)
}

// (b) the same with a keyBy shuffle of (int64, int64) records at parallelism 2.
func BenchmarkShuffleInt64Pairs(b *testing.B) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src := weir.Generate(env, int64(b.N), 0, func(i int64) tuple.T2[int64, int64] { return tuple.Of2(i, i*3) })
	m := weir.Map(src, func(p tuple.T2[int64, int64]) tuple.T2[int64, int64] { p.F1++; return p })
	keyed := weir.KeyBy(m, func(p tuple.T2[int64, int64]) int64 { return p.F0 })
	f := weir.Filter(keyed.DataStream, func(p tuple.T2[int64, int64]) bool { return p.F1%5 != 0 })
	weir.Discard(f)
	b.ResetTimer()
	start := cpumeter.Now()
	execute(b, env)
	cpumeter.Report(b, int64(b.N), start)
}

// wordcountInput writes (once per machine) a text file of about size bytes
// and returns its path and word count.
func wordcountInput(b *testing.B, size int) (string, int64) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("weir-bench-wordcount-%d.txt", size))
	vocab := make([]string, 50_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range vocab {
		n := 2 + rng.IntN(9)
		var w strings.Builder
		for range n {
			w.WriteByte(byte('a' + rng.IntN(26)))
		}
		vocab[i] = w.String()
	}
	if st, err := os.Stat(path); err != nil || st.Size() < int64(size) {
		var sb strings.Builder
		for sb.Len() < size {
			for j := range 12 {
				if j > 0 {
					sb.WriteByte(' ')
				}
				// Zipf-like: low indexes are frequent.
				idx := int(float64(len(vocab)) * rng.Float64() * rng.Float64() * rng.Float64())
				sb.WriteString(vocab[idx])
			}
			sb.WriteString(".\n")
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var words int64
	for _, line := range strings.Split(string(data), "\n") {
		wordcount.Tokenize(line, func(string) { words++ })
	}
	return path, words
}

// (c) wordcount on a 100 MB file; one round is one whole run.
func BenchmarkWordcount100MB(b *testing.B) {
	size := 100 << 20
	if testing.Short() {
		size = 4 << 20
	}
	in, words := wordcountInput(b, size)
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "counts.txt")
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := cpumeter.Now()
			for range b.N {
				if err := wordcount.Run(context.Background(), wordcount.Options{Input: in, Output: out, Parallelism: p}); err != nil {
					b.Fatal(err)
				}
			}
			cpu, _ := cpumeter.Now().Since(start)
			cpumeter.Report(b, words*int64(b.N), start)
			b.ReportMetric(float64(size)*float64(b.N)/cpu.Seconds()/1e6, "MB/s/core")
		})
	}
}
