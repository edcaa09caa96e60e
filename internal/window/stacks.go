package window

// Stacks is a FIFO of slice accumulators, oldest first, that answers "the
// merge of everything queued" in amortized O(1) merges per push, pop and
// query, whatever the queue's length: the two-stacks sliding aggregation
// (Tangwongsan et al., "In-order sliding-window aggregation in worst-case
// constant time" reviews it). A sliding window of Size/Slice = 3600 slices
// thus costs a few merges per firing, not 3599.
//
// merge(a, b) must be associative, a older than b; it need not be
// commutative, and it must not change a or b (results are kept, and heap
// snapshots may read accumulators), so it returns a new value: the window
// operators give a user's Merge copies of accumulators it could change.
//
// The queue is in memory: it is a cache over a key's slices, which the
// owner rebuilds from keyed state when it is lost (restore) or when a
// queued slice changes (a late element within allowed lateness).
type Stacks[A any] struct {
	merge func(a, b A) A
	// front holds the oldest items, the oldest last; front[i].agg merges
	// front[i] with every newer item in front (front[i-1] ... front[0]).
	front []stackItem[A]
	// back holds the newest items in time order; backAgg merges them all.
	back    []stackItem[A]
	backAgg A
}

type stackItem[A any] struct {
	start  int64
	v, agg A
}

// NewStacks returns an empty queue merging with merge.
func NewStacks[A any](merge func(a, b A) A) *Stacks[A] { return &Stacks[A]{merge: merge} }

// Len is the number of queued slices.
func (q *Stacks[A]) Len() int { return len(q.front) + len(q.back) }

// Push queues the accumulator of the slice starting at start, which must be
// newer than every queued slice.
func (q *Stacks[A]) Push(start int64, v A) {
	if len(q.back) == 0 {
		q.backAgg = v
	} else {
		q.backAgg = q.merge(q.backAgg, v)
	}
	q.back = append(q.back, stackItem[A]{start: start, v: v})
}

// Oldest is the start of the oldest queued slice; ok is false when empty.
func (q *Stacks[A]) Oldest() (start int64, ok bool) {
	if n := len(q.front); n > 0 {
		return q.front[n-1].start, true
	}
	if len(q.back) > 0 {
		return q.back[0].start, true
	}
	return 0, false
}

// EvictBefore drops every queued slice starting before start.
func (q *Stacks[A]) EvictBefore(start int64) {
	for {
		if len(q.front) == 0 {
			if len(q.back) == 0 || q.back[0].start >= start {
				return
			}
			q.flip()
		}
		n := len(q.front)
		if q.front[n-1].start >= start {
			return
		}
		var zero stackItem[A]
		q.front[n-1] = zero // let the accumulator go
		q.front = q.front[:n-1]
	}
}

// flip moves back onto front, newest first, computing the suffix merges:
// each item is moved once, so merges stay amortized O(1) per item.
func (q *Stacks[A]) flip() {
	for i := len(q.back) - 1; i >= 0; i-- {
		it := q.back[i]
		if len(q.front) == 0 {
			it.agg = it.v
		} else {
			it.agg = q.merge(it.v, q.front[len(q.front)-1].agg)
		}
		q.front = append(q.front, it)
		q.back[i] = stackItem[A]{}
	}
	q.back = q.back[:0]
	var zero A
	q.backAgg = zero
}

// Query merges every queued slice, oldest first; ok is false when empty.
func (q *Stacks[A]) Query() (a A, ok bool) {
	nf, nb := len(q.front), len(q.back)
	switch {
	case nf == 0 && nb == 0:
		return a, false
	case nf == 0:
		return q.backAgg, true
	case nb == 0:
		return q.front[nf-1].agg, true
	}
	return q.merge(q.front[nf-1].agg, q.backAgg), true
}

// Reset empties the queue, keeping its memory.
func (q *Stacks[A]) Reset() {
	clear(q.front)
	clear(q.back)
	q.front, q.back = q.front[:0], q.back[:0]
	var zero A
	q.backAgg = zero
}
