package benchjobs

import (
	"context"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

// KeyedCountKeys runs generator -> keyBy(i mod keys) -> count in keyed
// ValueState (a keyed Reduce) -> discard over n records, at the given
// parallelism and backend, with checkpoints every interval into dir
// (interval 0: no checkpoints). It is the fourth and fifth rows of issue
// 12's table (`weir bench keyed`); bench/flink's keyed job is its twin.
func KeyedCountKeys(ctx context.Context, n, keys int64, parallelism int, backend string, interval time.Duration, dir string) (int64, error) {
	cfg := weir.Config{Parallelism: parallelism, StateBackend: backend}
	if interval > 0 {
		cfg.Checkpointing = &weir.CheckpointConfig{Interval: interval, Dir: dir}
	}
	env := weir.NewEnvironment(cfg)
	src := weir.Generate(env, n, 0, func(i int64) tuple.T2[int64, int64] { return tuple.Of2(i%keys, int64(1)) })
	counts := weir.Reduce(weir.KeyBy(src, func(p tuple.T2[int64, int64]) int64 { return p.F0 }),
		func(a, b tuple.T2[int64, int64]) tuple.T2[int64, int64] { a.F1 += b.F1; return a })
	weir.Discard(counts)
	_, err := env.Execute(ctx, "bench-keyed-count")
	return n, err
}
