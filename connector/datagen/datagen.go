package datagen

import (
	"github.com/weirhq/weir/internal/operator"
)

// batch is how many records a reader emits per poll, so the task gets back
// to its mailbox regularly without paying per record.
const batch = 1024

// Generator emits fn(i) for every index i in [0, count) (count < 0: without
// end), split among subtasks. RatePerSecond > 0 limits the whole source's
// rate (each subtask takes an equal share) by processing time.
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
	rate    float64 // per millisecond, this subtask's share
	startMs int64
	emitted int64
}

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
	if r.gen.RatePerSecond > 0 {
		r.rate = r.gen.RatePerSecond / float64(ctx.Parallelism) / 1000
		r.startMs = ctx.Clock.NowMillis()
	}
	return nil
}

func (r *genReader[T]) Poll(out operator.Input[T]) (operator.Status, <-chan struct{}, int64, error) {
	n := int64(batch)
	if r.rate > 0 {
		now := r.ctx.Clock.NowMillis()
		allowed := int64(float64(now-r.startMs)*r.rate) + 1 - r.emitted
		if allowed <= 0 {
			// The next record is allowed once (now-start)*rate+1 exceeds emitted.
			wait := r.startMs + int64(float64(r.emitted-1)/r.rate) + 1 - now
			return operator.NothingAvailable, nil, max(wait, 1), nil
		}
		n = min(n, allowed)
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
	seq       Sequence
	next, end int64
}

func (r *seqReader) Open(ctx *operator.Context) error {
	from, to := Share(r.seq.To-r.seq.From+1, ctx.Subtask, ctx.Parallelism)
	r.next, r.end = r.seq.From+from, r.seq.From+to
	return nil
}

func (r *seqReader) Poll(out operator.Input[int64]) (operator.Status, <-chan struct{}, int64, error) {
	stop := min(r.next+batch, r.end)
	for i := r.next; i < stop; i++ {
		out.ProcessElement(i, operator.NoTimestamp)
	}
	r.next = stop
	if r.next >= r.end {
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
