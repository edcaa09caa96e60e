package datagen

import (
	"fmt"
	"math"

	"github.com/weirhq/weir/internal/operator"
)

// batch is how many records a reader emits per poll, so the task gets back
// to its mailbox regularly without paying per record.
const batch = 1024

// Generator emits fn(i) for every index i in [0, count) (count < 0: without
// end), split among subtasks. RatePerSecond > 0 limits the whole source's
// rate (each subtask takes an equal share) by processing time; 0 and +Inf
// mean no limit, and so does a rate too high for a millisecond's share of
// it to be counted in int64. A negative or NaN rate fails Open.
type Generator[T any] struct {
	Count         int64
	Fn            func(i int64) T
	RatePerSecond float64
}

// Bounded reports whether the generator ends.
func (g Generator[T]) Bounded() bool { return g.Count >= 0 }

// NewReader implements the source contract.
func (g Generator[T]) NewReader() operator.SourceReader[T] { return &genReader[T]{gen: g} }

type genReader[T any] struct {
	gen       Generator[T]
	next, end int64
	ctx       *operator.Context
	// rate limiting, by processing time
	rate    float64 // per millisecond, this subtask's share; 0: no limit
	startMs int64
	emitted int64
}

// maxWaitMs bounds how long a rate-limited reader asks to wait at once; it
// recomputes when polled again, so a very low rate only costs a poll a minute.
const maxWaitMs = 60_000

// unlimitedPerMs is the share per millisecond above which a rate is no
// limit: more records than int64 can count in one millisecond.
const unlimitedPerMs = 1 << 62

// Share returns the index range [from, to) of subtask i of p over n indexes.
func Share(n int64, i, p int) (from, to int64) {
	return n/int64(p)*int64(i) + min(int64(i), n%int64(p)), n/int64(p)*int64(i+1) + min(int64(i+1), n%int64(p))
}

func (r *genReader[T]) Open(ctx *operator.Context) error {
	r.ctx = ctx
	if r.gen.Count < 0 {
		// Unbounded: subtask i takes indexes i, i+p, ... through next/stride.
		r.next, r.end = int64(ctx.Subtask), -1
	} else {
		r.next, r.end = Share(r.gen.Count, ctx.Subtask, ctx.Parallelism)
	}
	rate := r.gen.RatePerSecond
	if math.IsNaN(rate) || rate < 0 {
		return fmt.Errorf("generator: the rate must be a number of records per second, 0 or more (0 or +Inf: no limit); got %v", rate)
	}
	if perMs := rate / float64(ctx.Parallelism) / 1000; rate > 0 && perMs < unlimitedPerMs {
		// A positive rate whose share underflows to 0 is as slow as can be, not unlimited.
		r.rate = max(perMs, math.SmallestNonzeroFloat64)
		r.startMs = ctx.Clock.NowMillis()
	}
	return nil
}

func (r *genReader[T]) Poll(out operator.Input[T]) (operator.Status, <-chan struct{}, int64, error) {
	n := int64(batch)
	if r.rate > 0 {
		// The first record comes at once, then one every 1/rate ms: by
		// elapsed ms, floor(elapsed*rate)+1 records are due. In float64, so
		// no product or quotient overflows int64.
		elapsed := float64(r.ctx.Clock.NowMillis() - r.startMs)
		allowed := math.Floor(elapsed*r.rate) + 1 - float64(r.emitted)
		if allowed < 1 {
			// Record number emitted+1 is due once elapsed*rate >= emitted.
			wait := math.Ceil(float64(r.emitted)/r.rate - elapsed)
			return operator.NothingAvailable, nil, int64(max(min(wait, maxWaitMs), 1)), nil
		}
		n = int64(min(float64(n), allowed))
	}
	fn := r.gen.Fn
	if r.end < 0 {
		stride := int64(r.ctx.Parallelism)
		for range n {
			out.ProcessElement(fn(r.next), operator.NoTimestamp)
			r.next += stride
		}
		r.emitted += n
		return operator.MoreAvailable, nil, 0, nil
	}
	stop := min(r.next+n, r.end)
	for i := r.next; i < stop; i++ {
		out.ProcessElement(fn(i), operator.NoTimestamp)
	}
	r.emitted += stop - r.next
	r.next = stop
	if r.next >= r.end {
		return operator.EndOfInput, nil, 0, nil
	}
	return operator.MoreAvailable, nil, 0, nil
}

func (r *genReader[T]) Close() error { return nil }

// Sequence emits the numbers [from, to], split among subtasks.
type Sequence struct{ From, To int64 }

// NewReader implements the source contract.
func (s Sequence) NewReader() operator.SourceReader[int64] { return &seqReader{seq: s} }

type seqReader struct {
	seq  Sequence
	next int64
	left uint64 // numbers still to emit, from next on
}

func (r *seqReader) Open(ctx *operator.Context) error {
	if r.seq.To < r.seq.From {
		return nil // empty
	}
	// The count in uint64: To-From+1 wraps around int64 for wide ranges.
	n := uint64(r.seq.To) - uint64(r.seq.From) + 1
	if n == 0 || n > math.MaxInt64 {
		return fmt.Errorf("sequence: %d to %d holds more than %d numbers", r.seq.From, r.seq.To, int64(math.MaxInt64))
	}
	from, to := Share(int64(n), ctx.Subtask, ctx.Parallelism)
	r.next, r.left = r.seq.From+from, uint64(to-from)
	return nil
}

func (r *seqReader) Poll(out operator.Input[int64]) (operator.Status, <-chan struct{}, int64, error) {
	n := min(r.left, batch)
	for i := range n {
		out.ProcessElement(r.next+int64(i), operator.NoTimestamp)
	}
	// next may pass To only after the last number: it is not read again.
	r.next += int64(n)
	r.left -= n
	if r.left == 0 {
		return operator.EndOfInput, nil, 0, nil
	}
	return operator.MoreAvailable, nil, 0, nil
}

func (r *seqReader) Close() error { return nil }

// Slice emits the elements of a slice, split among subtasks in contiguous
// ranges (at parallelism 1, in order).
type Slice[T any] struct{ Items []T }

// NewReader implements the source contract.
func (s Slice[T]) NewReader() operator.SourceReader[T] { return &sliceReader[T]{items: s.Items} }

type sliceReader[T any] struct {
	items     []T
	next, end int
}

func (r *sliceReader[T]) Open(ctx *operator.Context) error {
	from, to := Share(int64(len(r.items)), ctx.Subtask, ctx.Parallelism)
	r.next, r.end = int(from), int(to)
	return nil
}

func (r *sliceReader[T]) Poll(out operator.Input[T]) (operator.Status, <-chan struct{}, int64, error) {
	stop := min(r.next+batch, r.end)
	for _, v := range r.items[r.next:stop] {
		out.ProcessElement(v, operator.NoTimestamp)
	}
	r.next = stop
	if r.next >= r.end {
		return operator.EndOfInput, nil, 0, nil
	}
	return operator.MoreAvailable, nil, 0, nil
}

func (r *sliceReader[T]) Close() error { return nil }
