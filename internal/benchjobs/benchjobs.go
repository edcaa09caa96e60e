package benchjobs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/jobs/wordcount"
	"github.com/weirhq/weir/tuple"
)

// ChainedMapFilter runs generator -> map -> filter -> discard, all chained
// into one task, over n records.
func ChainedMapFilter(ctx context.Context, n int64) (int64, error) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	src := weir.Sequence(env, 0, n-1)
	m := weir.Map(src, func(v int64) int64 { return v*3 + 1 })
	f := weir.Filter(m, func(v int64) bool { return v%5 != 0 })
	weir.Discard(f)
	_, err := env.Execute(ctx, "bench-chained")
	return n, err
}

// ShuffleInt64Pairs runs the same pipeline over (int64, int64) records with a
// keyBy shuffle between map and filter, at the given parallelism.
func ShuffleInt64Pairs(ctx context.Context, n int64, parallelism int) (int64, error) {
	return Shuffle(ctx, n, weir.Config{Parallelism: parallelism})
}

// Shuffle is ShuffleInt64Pairs under cfg: on a multi-process cluster
// (`weir bench shuffle --jobmanager`), which runs a streaming job only with
// a checkpoint directory every process shares, cfg carries one.
func Shuffle(ctx context.Context, n int64, cfg weir.Config) (int64, error) {
	env := weir.NewEnvironment(cfg)
	src := weir.Generate(env, n, 0, func(i int64) tuple.T2[int64, int64] { return tuple.Of2(i, i*3) })
	m := weir.Map(src, func(p tuple.T2[int64, int64]) tuple.T2[int64, int64] { p.F1++; return p })
	keyed := weir.KeyBy(m, func(p tuple.T2[int64, int64]) int64 { return p.F0 })
	f := weir.Filter(keyed.DataStream, func(p tuple.T2[int64, int64]) bool { return p.F1%5 != 0 })
	weir.Discard(f)
	_, err := env.Execute(ctx, "bench-shuffle")
	return n, err
}

// WordcountInput writes, once per machine, a text file of about size bytes
// under dir (Zipf-like words from a 50,000-word vocabulary) and returns its
// path and the number of words in it.
func WordcountInput(dir string, size int) (string, int64, error) {
	path := filepath.Join(dir, fmt.Sprintf("weir-bench-wordcount-%d.txt", size))
	if st, err := os.Stat(path); err != nil || st.Size() < int64(size) {
		rng := rand.New(rand.NewPCG(1, 2))
		vocab := make([]string, 50_000)
		for i := range vocab {
			var w strings.Builder
			for range 2 + rng.IntN(9) {
				w.WriteByte(byte('a' + rng.IntN(26)))
			}
			vocab[i] = w.String()
		}
		var sb strings.Builder
		sb.Grow(size + 200)
		for sb.Len() < size {
			for j := range 12 {
				if j > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64()*rng.Float64())])
			}
			sb.WriteString(".\n")
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			return "", 0, err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, err
	}
	var words int64
	for _, line := range strings.Split(string(data), "\n") {
		wordcount.Tokenize(line, func(string) { words++ })
	}
	return path, words, nil
}

// Wordcount runs the wordcount job over input at the given parallelism,
// writing to output, and returns the number of words counted.
func Wordcount(ctx context.Context, input, output string, words int64, parallelism int) (int64, error) {
	err := wordcount.Run(ctx, wordcount.Options{Input: input, Output: output, Parallelism: parallelism})
	return words, err
}

// KeyedCount runs generator -> keyBy(i mod 10,000) -> count in keyed
// ValueState -> discard over n records, with checkpoints every interval
// into dir (interval 0: no checkpoints).
func KeyedCount(ctx context.Context, n int64, parallelism int, backend string, interval time.Duration, dir string) (int64, error) {
	return KeyedCountKeys(ctx, n, 10_000, parallelism, backend, interval, dir)
}

// WindowCount is the window benchmark (`weir bench window`): a generator of (key, 1)
// with event time advancing 1 ms every 1000 events (a million events per
// second of event time), bounded-out-of-orderness watermarks, keyBy(i mod
// keys), and a count per key in the windows of assigner, emitted and
// discarded; at the given parallelism and backend.
func WindowCount(ctx context.Context, n int64, keys int64, parallelism int, backend string, assigner weir.WindowAssigner) (int64, error) {
	env := weir.NewEnvironment(weir.Config{Parallelism: parallelism, StateBackend: backend})
	src := weir.Generate(env, n, 0, func(i int64) tuple.T2[int64, int64] { return tuple.Of2(i%keys, i/1000) })
	timed := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[tuple.T2[int64, int64]]{
		Timestamp: func(p tuple.T2[int64, int64]) int64 { return p.F1 }, MaxOutOfOrderness: 0})
	ws := weir.Window(weir.KeyBy(timed, func(p tuple.T2[int64, int64]) int64 { return p.F0 }), assigner)
	weir.Discard(weir.WindowAggregate[int64, tuple.T2[int64, int64], int64, int64](ws, countAggregate{}))
	_, err := env.Execute(ctx, "bench-window-count")
	return n, err
}

type countAggregate struct{}

func (countAggregate) CreateAccumulator() int64                    { return 0 }
func (countAggregate) Add(_ tuple.T2[int64, int64], n int64) int64 { return n + 1 }
func (countAggregate) GetResult(n int64) int64                     { return n }
func (countAggregate) Merge(a, b int64) int64                      { return a + b }
