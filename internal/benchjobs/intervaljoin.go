package benchjobs

import (
	"context"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

// IntervalJoin joins two generators of n (key, ts) records each (keys keys,
// 100 records per ms per side) within [-1s, +1s] and discards the pairs
// (about 2 per record at 100,000 keys). It returns the input records, 2n.
func IntervalJoin(ctx context.Context, n, keys int64, parallelism int, backend string) (int64, error) {
	env := weir.NewEnvironment(weir.Config{Parallelism: parallelism, StateBackend: backend})
	side := func(salt int64) weir.KeyedStream[int64, tuple.T2[int64, int64]] {
		src := weir.Generate(env, n, 0, func(i int64) tuple.T2[int64, int64] { return tuple.Of2((i*salt)%keys, i/100) })
		timed := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[tuple.T2[int64, int64]]{
			Timestamp: func(p tuple.T2[int64, int64]) int64 { return p.F1 }, MaxOutOfOrderness: 0})
		return weir.KeyBy(timed, func(p tuple.T2[int64, int64]) int64 { return p.F0 })
	}
	j := weir.IntervalJoin(side(1), side(7)).Between(-time.Second, time.Second)
	weir.Discard(weir.ProcessIntervalJoin(j, weir.ProcessJoinFunc[tuple.T2[int64, int64], tuple.T2[int64, int64], int64](
		func(_ weir.ProcessJoinContext, l, r tuple.T2[int64, int64], out weir.Collector[int64]) error {
			out.Collect(l.F1 - r.F1)
			return nil
		})))
	_, err := env.Execute(ctx, "bench-interval-join")
	return 2 * n, err
}
