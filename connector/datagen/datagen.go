package datagen

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// batch is how many records a reader emits per poll, so the task gets back
// to its mailbox regularly without paying per record.
const batch = 1024

// yieldCheck is how many records go out per Output.CollectBatch, with a
// check of Output.ShouldYield after each: often enough that a backpressured
// task gets its thread back soon, rarely enough to cost nothing per record.
const yieldCheck = 64

// Generator emits Fn(i) for every index i in [0, Count) (Count < 0: without
// end). RatePerSecond > 0 limits the whole source's rate by processing time
// (each split takes an equal share); 0 and +Inf mean no limit, and so does a
// rate too high for a millisecond's share of it to be counted in int64. A
// negative or NaN rate, or a nil Fn, fails CreateReader.
//
// A bounded generator (Count >= 0) cuts [0, Count) into one contiguous
// range per subtask; restored at another parallelism, the ranges are
// redistributed and every index is still emitted exactly once. An unbounded
// generator gives subtask i of p the indexes i, i+p, i+2p, ...; it can only
// be restored at the parallelism it started with.
type Generator[T any] struct {
	Count         int64
	Fn            func(i int64) T
	RatePerSecond float64
}

// Boundedness implements source.Source.
func (g Generator[T]) Boundedness() source.Boundedness {
	if g.Count < 0 {
		return source.Unbounded
	}
	return source.Bounded
}

// SplitCodec implements source.Source.
func (g Generator[T]) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (g Generator[T]) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	return newEnumerator(ctx, restored, "generator", g.Count)
}

// CreateReader implements source.Source.
func (g Generator[T]) CreateReader(ctx source.ReaderContext) (source.Reader[T, Split], error) {
	if g.Fn == nil {
		return nil, errors.New("generator: Fn is nil")
	}
	return newReader(ctx, "generator", g.Fn, g.RatePerSecond, g.Count < 0)
}

// Sequence emits the numbers [From, To], split among subtasks in contiguous
// ranges (at parallelism 1, in order). To < From is empty.
type Sequence struct{ From, To int64 }

// count is how many numbers the sequence holds; an error when int64 cannot
// count them.
func (s Sequence) count() (int64, error) {
	if s.To < s.From {
		return 0, nil
	}
	// The count in uint64: To-From+1 wraps around int64 for wide ranges.
	n := uint64(s.To) - uint64(s.From) + 1
	if n == 0 || n > math.MaxInt64 {
		return 0, fmt.Errorf("sequence: %d to %d holds more than %d numbers", s.From, s.To, int64(math.MaxInt64))
	}
	return int64(n), nil
}

// Boundedness implements source.Source.
func (s Sequence) Boundedness() source.Boundedness { return source.Bounded }

// SplitCodec implements source.Source. A split's indexes count from From.
func (s Sequence) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s Sequence) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	n, err := s.count()
	if err != nil {
		return nil, err
	}
	return newEnumerator(ctx, restored, "sequence", n)
}

// CreateReader implements source.Source.
func (s Sequence) CreateReader(ctx source.ReaderContext) (source.Reader[int64, Split], error) {
	if _, err := s.count(); err != nil {
		return nil, err
	}
	from := s.From
	// From+i never leaves [From, To] for the indexes of the sequence.
	r, err := newReader(ctx, "sequence", func(i int64) int64 { return from + i }, 0, false)
	if r != nil {
		// Filled in place, without a call per record.
		r.seq, r.seqFrom = true, from
	}
	return r, err
}

// Slice emits the elements of a slice, split among subtasks in contiguous
// ranges (at parallelism 1, in order).
type Slice[T any] struct{ Items []T }

// Boundedness implements source.Source.
func (s Slice[T]) Boundedness() source.Boundedness { return source.Bounded }

// SplitCodec implements source.Source. A split's indexes are positions in Items.
func (s Slice[T]) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s Slice[T]) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	return newEnumerator(ctx, restored, "slice", int64(len(s.Items)))
}

// CreateReader implements source.Source.
func (s Slice[T]) CreateReader(ctx source.ReaderContext) (source.Reader[T, Split], error) {
	r, err := newReader[T](ctx, "slice", nil, 0, false)
	if err != nil {
		return nil, err
	}
	r.items = s.Items
	return r, nil
}

// Share returns the index range [from, to) of subtask i of p over n indexes.
func Share(n int64, i, p int) (from, to int64) {
	return n/int64(p)*int64(i) + min(int64(i), n%int64(p)), n/int64(p)*int64(i+1) + min(int64(i+1), n%int64(p))
}

// Split is the work the source made for one subtask when it first started,
// with its position. Bounded sources' splits are the index range
// [Next, End); an unbounded generator's split emits Next, Next+Parallelism,
// Next+2*Parallelism, ... without end (End is -1).
type Split struct {
	// Subtask is the subtask of Parallelism the split was made for at the
	// source's first start. A split keeps them across restores.
	Subtask, Parallelism int
	// Next is the next index to emit.
	Next int64
	// End is one past the last index, or -1 without end.
	End int64
}

func (s Split) String() string {
	if s.End < 0 {
		return fmt.Sprintf("split %d of %d at %d (every %dth index)", s.Subtask, s.Parallelism, s.Next, s.Parallelism)
	}
	return fmt.Sprintf("split %d of %d at %d of [.., %d)", s.Subtask, s.Parallelism, s.Next, s.End)
}

// enumerator hands each reader subtask the splits made for it: at the first
// start one per subtask, assigned when the subtask registers. Its state is
// the splits not assigned yet.
type enumerator struct {
	ctx         source.EnumeratorContext[Split]
	name        string
	unbounded   bool
	parallelism int // at the first start
	left        []Split
}

func newEnumerator(ctx source.EnumeratorContext[Split], restored []byte, name string, count int64) (*enumerator, error) {
	e := &enumerator{ctx: ctx, name: name, unbounded: count < 0}
	p := ctx.Parallelism()
	if restored != nil {
		var err error
		if e.parallelism, e.left, err = decodeEnumState(restored); err != nil {
			return nil, fmt.Errorf("%s: restoring the split enumerator: %w", name, err)
		}
		if e.unbounded && e.parallelism != p {
			return nil, rescaleError(name, e.parallelism, p)
		}
		return e, nil
	}
	e.parallelism = p
	for i := range p {
		if e.unbounded {
			e.left = append(e.left, Split{Subtask: i, Parallelism: p, Next: int64(i), End: -1})
			continue
		}
		from, to := Share(count, i, p)
		if from < to {
			e.left = append(e.left, Split{Subtask: i, Parallelism: p, Next: from, End: to})
		}
	}
	return e, nil
}

func rescaleError(name string, was, is int) error {
	return fmt.Errorf("%s: the checkpoint was taken at parallelism %d and a generator without end cannot be restored at parallelism %d (subtask i emits the indexes i, i+%d, ...); restore it at parallelism %d", name, was, is, was, was)
}

func (e *enumerator) Start() error { return nil }

// AddReader assigns the splits made for subtask i (after a restore at
// another parallelism, those of every old subtask j with j mod p == i),
// then tells it there are no more.
func (e *enumerator) AddReader(i int) error {
	p := e.ctx.Parallelism()
	var mine []Split
	kept := e.left[:0]
	for _, s := range e.left {
		if s.Subtask%p == i {
			mine = append(mine, s)
		} else {
			kept = append(kept, s)
		}
	}
	e.left = kept
	if len(mine) > 0 {
		e.ctx.Assign(i, mine...)
	}
	e.ctx.NoMoreSplits(i)
	return nil
}

func (e *enumerator) HandleSplitRequest(int) error { return nil }

func (e *enumerator) Snapshot(int64) ([]byte, error) {
	return encodeEnumState(e.parallelism, e.left), nil
}

func (e *enumerator) Close() error { return nil }

// reader emits the indexes of its splits: bounded splits one after the
// other, unbounded ones in turn, a batch per poll.
type reader[T any] struct {
	ctx   source.ReaderContext
	name  string
	fn    func(int64) T // the record of an index (nil: items)
	items []T
	buf   []T // records of a batch, yieldCheck long
	// seq: T is int64 and the record of index i is seqFrom+i (Sequence).
	seq       bool
	seqFrom   int64
	unbounded bool
	splits    []Split // not finished; splits[0] is read next
	// outs[i] is the output of splits[i] (source.Output.ForSplit, so a
	// source with a watermark strategy keeps a watermark per split); nil
	// until the next poll makes it. They move with their splits.
	outs []source.SplitOutput[T]
	// paused holds the ids of splits paused by watermark alignment
	// (source.SplitPauser), at most the splits held.
	paused map[string]bool
	noMore bool
	wake   chan struct{} // signalled when splits arrive or no more will
	err    error         // a restored split that cannot be read here

	// Rate limiting, by processing time.
	rate    float64 // the whole source's, per second; 0: no limit
	perMs   float64 // this reader's share per millisecond; 0: no limit
	startMs int64
	emitted int64 // since startMs
}

// maxWait bounds how long a rate-limited reader asks to wait at once; it
// recomputes when polled again, so a very low rate only costs a poll a minute.
const maxWait = time.Minute

// unlimitedPerMs is the share per millisecond above which a rate is no
// limit: more records than int64 can count in one millisecond.
const unlimitedPerMs = 1 << 62

func newReader[T any](ctx source.ReaderContext, name string, fn func(int64) T, rate float64, unbounded bool) (*reader[T], error) {
	if math.IsNaN(rate) || rate < 0 {
		return nil, fmt.Errorf("%s: the rate must be a number of records per second, 0 or more (0 or +Inf: no limit); got %v", name, rate)
	}
	r := &reader[T]{ctx: ctx, name: name, fn: fn, unbounded: unbounded, wake: make(chan struct{}, 1), buf: make([]T, yieldCheck)}
	if !math.IsInf(rate, 1) {
		r.rate = rate
	}
	return r, nil
}

func (r *reader[T]) Start() error { return r.err }

func (r *reader[T]) AddSplits(splits []Split) {
	for _, s := range splits {
		if r.unbounded && r.err == nil && (s.End >= 0 || s.Parallelism != r.ctx.Parallelism()) {
			if s.End >= 0 {
				r.err = fmt.Errorf("%s: a split without end was expected, got %v (was the source changed?)", r.name, s)
			} else {
				r.err = rescaleError(r.name, s.Parallelism, r.ctx.Parallelism())
			}
		}
		if !r.unbounded && r.err == nil && s.End < 0 {
			r.err = fmt.Errorf("%s: a split with an end was expected, got %v (was the source changed?)", r.name, s)
		}
		if r.fn == nil && r.err == nil && s.End > int64(len(r.items)) {
			r.err = fmt.Errorf("%s: %v is beyond the %d items (were the items changed?)", r.name, s, len(r.items))
		}
	}
	r.splits = append(r.splits, splits...)
	r.outs = append(r.outs, make([]source.SplitOutput[T], len(splits))...)
	r.rebase()
	signal(r.wake)
}

// splitID names a split to source.Output.ForSplit: the subtask it was made
// for, unique within the source across restores and rescaling.
func splitID(s Split) string { return strconv.Itoa(s.Subtask) }

func (r *reader[T]) NoMoreSplits() {
	r.noMore = true
	signal(r.wake)
}

// rebase recomputes the reader's share of the rate after its splits
// changed, starting its count anew: the share of each split is rate/p for
// the parallelism p it was made for.
func (r *reader[T]) rebase() {
	r.perMs = 0
	if r.rate == 0 || len(r.splits) == 0 {
		return
	}
	perMs := r.rate / float64(r.splits[0].Parallelism) / 1000 * float64(len(r.splits))
	if perMs >= unlimitedPerMs {
		return
	}
	// A positive rate whose share underflows to 0 is as slow as can be, not unlimited.
	r.perMs = max(perMs, math.SmallestNonzeroFloat64)
	r.startMs, r.emitted = r.ctx.Clock().NowMillis(), 0
}

func (r *reader[T]) PollNext(out source.Output[T]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.err != nil {
		return 0, nil, 0, r.err
	}
	if len(r.splits) == 0 {
		if r.noMore {
			return source.EndOfInput, nil, 0, nil
		}
		return source.NothingAvailable, r.wake, 0, nil
	}
	if r.outs[len(r.outs)-1] == nil {
		// Outputs of every split held before records of any, also when the rate makes this poll wait (new splits
		// are appended, so a nil one is at the end).
		for i := range r.outs {
			if r.outs[i] == nil {
				r.outs[i] = out.ForSplit(splitID(r.splits[i]))
			}
		}
	}
	if len(r.paused) > 0 && r.paused[splitID(r.splits[0])] {
		// Read a split that is not paused first; none: wait for a resume.
		k := slices.IndexFunc(r.splits, func(s Split) bool { return !r.paused[splitID(s)] })
		if k < 0 {
			return source.NothingAvailable, r.wake, 0, nil
		}
		r.splits[0], r.splits[k] = r.splits[k], r.splits[0]
		r.outs[0], r.outs[k] = r.outs[k], r.outs[0]
	}
	n := int64(batch)
	if r.perMs > 0 {
		// The first record comes at once, then one every 1/rate ms: by
		// elapsed ms, floor(elapsed*rate)+1 records are due. In float64, so
		// no product or quotient overflows int64.
		elapsed := float64(r.ctx.Clock().NowMillis() - r.startMs)
		allowed := math.Floor(elapsed*r.perMs) + 1 - float64(r.emitted)
		if allowed < 1 {
			// Record number emitted+1 is due once elapsed*rate >= emitted.
			wait := math.Ceil(float64(r.emitted)/r.perMs - elapsed)
			return source.NothingAvailable, nil, time.Duration(max(min(wait, float64(maxWait/time.Millisecond)), 1)) * time.Millisecond, nil
		}
		n = int64(min(float64(n), allowed))
	}
	s, so := &r.splits[0], r.outs[0]
	if s.End < 0 {
		stride := int64(s.Parallelism)
		next := s.Next
		done := int64(0)
		for done < n {
			k := min(n-done, yieldCheck)
			buf := r.buf[:k]
			for i := range buf {
				buf[i] = r.fn(next)
				next += stride
			}
			so.CollectBatch(buf)
			done += k
			if out.ShouldYield() {
				break
			}
		}
		clear(r.buf) // let go of what the records reference
		s.Next = next
		r.emitted += done
		if len(r.splits) > 1 { // take turns
			first := r.splits[0]
			copy(r.splits, r.splits[1:])
			r.splits[len(r.splits)-1] = first
			copy(r.outs, r.outs[1:])
			r.outs[len(r.outs)-1] = so
		}
		return source.MoreAvailable, nil, 0, nil
	}
	stop := s.End
	if stop-s.Next > n {
		stop = s.Next + n
	}
	for from := s.Next; from < stop; {
		to := min(stop, from+yieldCheck)
		switch {
		case r.fn == nil:
			so.CollectBatch(r.items[from:to])
		case r.seq:
			b := any(r.buf[:to-from]).([]int64)
			for i := range b {
				b[i] = r.seqFrom + from + int64(i)
			}
			so.CollectBatch(r.buf[:to-from])
		default:
			buf, fn := r.buf[:to-from], r.fn
			for i := range buf {
				buf[i] = fn(from + int64(i))
			}
			so.CollectBatch(buf)
		}
		if from = to; out.ShouldYield() {
			stop = to
		}
	}
	clear(r.buf)
	r.emitted += stop - s.Next
	s.Next = stop
	if s.Next < s.End {
		return source.MoreAvailable, nil, 0, nil
	}
	out.ReleaseSplit(splitID(*s))
	delete(r.paused, splitID(*s))
	r.splits, r.outs[0] = r.splits[1:], nil
	r.outs = r.outs[1:]
	r.rebase()
	if len(r.splits) == 0 && r.noMore {
		return source.EndOfInput, nil, 0, nil
	}
	return source.MoreAvailable, nil, 0, nil
}

// PauseOrResumeSplits implements source.SplitPauser (watermark alignment):
// a paused split emits nothing until resumed; the reader reads its other
// splits meanwhile, and waits when all are paused.
func (r *reader[T]) PauseOrResumeSplits(pause, resume []string) {
	if r.paused == nil {
		r.paused = map[string]bool{}
	}
	for _, id := range pause {
		if slices.ContainsFunc(r.splits, func(s Split) bool { return splitID(s) == id }) {
			r.paused[id] = true
		}
	}
	for _, id := range resume {
		delete(r.paused, id)
	}
	if len(resume) > 0 {
		signal(r.wake)
	}
}

// SnapshotState returns the unfinished splits with the next index of each.
func (r *reader[T]) SnapshotState(int64) ([]Split, error) {
	return append([]Split(nil), r.splits...), nil
}

func (r *reader[T]) NotifyCheckpointComplete(int64) error { return nil }

func (r *reader[T]) Close() error { return nil }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// The sources implement the contract.
var (
	_ source.SplitPauser          = (*reader[int])(nil)
	_ source.Source[int, Split]   = Generator[int]{}
	_ source.Source[int64, Split] = Sequence{}
	_ source.Source[int, Split]   = Slice[int]{}
)
