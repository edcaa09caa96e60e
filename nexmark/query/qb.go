package query

// Helpers shared by q5, q7, q8 and q11.

// qbCount is COUNT(*) as an incremental window aggregate: the accumulator
// is the count itself, so the window operator keeps one int64 per key and
// window (per slice for sliding windows).
type qbCount[T any] struct{}

func (qbCount[T]) CreateAccumulator() int64  { return 0 }
func (qbCount[T]) Add(_ T, acc int64) int64  { return acc + 1 }
func (qbCount[T]) GetResult(acc int64) int64 { return acc }
func (qbCount[T]) Merge(a, b int64) int64    { return a + b }

// qbWindowStart is the start of the tumbling window of size ms holding ts
// (window_start of Flink's TUMBLE, offset 0: floor division, also for
// times before the epoch).
func qbWindowStart(ts, size int64) int64 {
	r := ts % size
	if r < 0 {
		r += size
	}
	return ts - r
}
