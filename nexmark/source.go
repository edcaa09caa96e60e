package nexmark

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// pollBatch is how many events a reader emits per poll, so the task gets
// back to its mailbox regularly without paying per event.
const pollBatch = 1024

// yieldCheck is how many events go out per CollectBatch, with a check of
// ShouldYield after each: a backpressured task gets its thread back soon,
// and the check costs nothing per event.
const yieldCheck = 64

// Source is the Nexmark generator as a Weir source (weir.FromSource[Event,
// Split]): at its first start it makes one split per reader subtask, split
// i of p holding the event numbers n with n mod p = i, so every split's
// event time advances at the same pace (as Nexmark's parallel generators
// do) and the union is the stream of Config whatever the parallelism. A
// split's position (its next event number) is checkpointed; restored at
// another parallelism, splits move whole between readers and every event
// is still emitted exactly once. With Config.Events 0 it never ends.
// Records carry no timestamp: a watermark strategy takes Event.DateTime.
type Source struct{ Config Config }

// Boundedness implements source.Source.
func (s Source) Boundedness() source.Boundedness {
	if s.Config.Events == 0 {
		return source.Unbounded
	}
	return source.Bounded
}

// SplitCodec implements source.Source.
func (s Source) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s Source) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	if err := s.Config.Validate(); err != nil {
		return nil, err
	}
	e := &enumerator{ctx: ctx}
	if restored != nil {
		var err error
		if e.left, err = decodeEnumState(restored); err != nil {
			return nil, fmt.Errorf("nexmark: restoring the split enumerator: %w", err)
		}
		return e, nil
	}
	p := ctx.Parallelism()
	end := s.Config.Events
	if end == 0 {
		end = -1
	}
	fp := s.Config.fingerprint()
	for i := range p {
		if end < 0 || int64(i) < end {
			e.left = append(e.left, Split{Subtask: i, Parallelism: p, Next: int64(i), End: end, Config: fp})
		}
	}
	return e, nil
}

// CreateReader implements source.Source.
func (s Source) CreateReader(ctx source.ReaderContext) (source.Reader[Event, Split], error) {
	g, err := NewGenerator(s.Config)
	if err != nil {
		return nil, err
	}
	return &reader{g: g, fp: s.Config.fingerprint(), end: s.Config.Events, wake: make(chan struct{}, 1), buf: make([]Event, yieldCheck)}, nil
}

// fingerprint identifies the stream a Config makes, so that a split is not
// restored into a source that would generate other events for it.
func (c Config) fingerprint() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%+v", c)
	return h.Sum64()
}

// Split is one reader's share of the stream with its position: the event
// numbers Next, Next+Parallelism, ... below End (-1: without end).
type Split struct {
	// Subtask is the subtask of Parallelism the split was made for at the
	// source's first start; the split holds the event numbers congruent to
	// Subtask modulo Parallelism. Both are kept across restores.
	Subtask, Parallelism int
	// Next is the next event number to emit.
	Next int64
	// End is Config.Events, or -1 without end.
	End int64
	// Config is the fingerprint of the Config the split was made with.
	Config uint64
}

func (s Split) String() string {
	return fmt.Sprintf("nexmark split %d of %d at event %d (end %d)", s.Subtask, s.Parallelism, s.Next, s.End)
}

// splitID names a split to source.Output.ForSplit: unique within the
// source across restores.
func splitID(s Split) string { return strconv.Itoa(s.Subtask) }

// enumerator hands each reader subtask its splits when it registers (after
// a restore at another parallelism, those of every old subtask j with j
// mod p = i). Its state is the splits not assigned yet.
type enumerator struct {
	ctx  source.EnumeratorContext[Split]
	left []Split
}

func (e *enumerator) Start() error { return nil }

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

func (e *enumerator) Snapshot(int64) ([]byte, error) { return encodeEnumState(e.left), nil }

func (e *enumerator) Close() error { return nil }

// reader generates the events of its splits, a batch per poll, taking
// turns between splits so their event times stay together.
type reader struct {
	g      *Generator
	fp     uint64
	end    int64
	splits []Split // unfinished; splits[0] is read next
	// outs[i] is the output of splits[i] (source.Output.ForSplit), nil
	// until the next poll makes it; they move with their splits.
	outs   []source.SplitOutput[Event]
	paused map[string]bool // split ids paused by watermark alignment
	buf    []Event         // events of one CollectBatch, reused
	noMore bool
	wake   chan struct{} // signalled when splits arrive, no more will, or one is resumed
	err    error         // a split that does not belong to this source
}

func (r *reader) Start() error { return r.err }

func (r *reader) AddSplits(splits []Split) {
	for _, s := range splits {
		if r.err != nil {
			break
		}
		end := r.end
		if end == 0 {
			end = -1
		}
		if s.Config != r.fp || s.End != end {
			r.err = fmt.Errorf("nexmark: %v was made by a source with another configuration (events, rate, seed, ...); restore it with the configuration it was checkpointed with", s)
		}
	}
	r.splits = append(r.splits, splits...)
	r.outs = append(r.outs, make([]source.SplitOutput[Event], len(splits))...)
	signal(r.wake)
}

func (r *reader) NoMoreSplits() {
	r.noMore = true
	signal(r.wake)
}

func (r *reader) PollNext(out source.Output[Event]) (source.Status, <-chan struct{}, time.Duration, error) {
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
		// Outputs of every split before records of any (new splits are
		// appended, so a missing one is at the end).
		for i := range r.outs {
			if r.outs[i] == nil {
				r.outs[i] = out.ForSplit(splitID(r.splits[i]))
			}
		}
	}
	if len(r.paused) > 0 && r.paused[splitID(r.splits[0])] {
		k := slices.IndexFunc(r.splits, func(s Split) bool { return !r.paused[splitID(s)] })
		if k < 0 {
			return source.NothingAvailable, r.wake, 0, nil
		}
		r.splits[0], r.splits[k] = r.splits[k], r.splits[0]
		r.outs[0], r.outs[k] = r.outs[k], r.outs[0]
	}
	s, so := &r.splits[0], r.outs[0]
	stride := int64(s.Parallelism)
	next := s.Next
	for done := 0; done < pollBatch; {
		k := min(pollBatch-done, yieldCheck)
		if s.End >= 0 {
			// Events left in the split: ceil((End-next)/stride).
			k = int(min(int64(k), (s.End-next+stride-1)/stride))
		}
		if k <= 0 {
			break
		}
		buf := r.buf[:k]
		for i := range buf {
			r.g.Event(next, &buf[i])
			next += stride
		}
		so.CollectBatch(buf)
		done += k
		if out.ShouldYield() {
			break
		}
	}
	clear(r.buf) // let go of the strings the events hold
	s.Next = next
	if s.End >= 0 && s.Next >= s.End {
		out.ReleaseSplit(splitID(*s))
		delete(r.paused, splitID(*s))
		r.splits, r.outs[0] = r.splits[1:], nil
		r.outs = r.outs[1:]
		if len(r.splits) == 0 && r.noMore {
			return source.EndOfInput, nil, 0, nil
		}
		return source.MoreAvailable, nil, 0, nil
	}
	if len(r.splits) > 1 { // take turns
		first := r.splits[0]
		copy(r.splits, r.splits[1:])
		r.splits[len(r.splits)-1] = first
		copy(r.outs, r.outs[1:])
		r.outs[len(r.outs)-1] = so
	}
	return source.MoreAvailable, nil, 0, nil
}

// PauseOrResumeSplits implements source.SplitPauser (watermark alignment).
func (r *reader) PauseOrResumeSplits(pause, resume []string) {
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

// SnapshotState returns the unfinished splits with their next event numbers.
func (r *reader) SnapshotState(int64) ([]Split, error) { return slices.Clone(r.splits), nil }

func (r *reader) NotifyCheckpointComplete(int64) error { return nil }

func (r *reader) Close() error { return nil }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// splitFormat is the first byte of an encoded split and of the
// enumerator's state, so the format can change without misreading old
// checkpoints.
const splitFormat = 1

// splitCodec encodes a Split as the format byte, Subtask and Parallelism
// as uvarints, Next and End as varints, and the config fingerprint as 8
// bytes.
type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s Split) []byte {
	dst = append(dst, splitFormat)
	dst = binary.AppendUvarint(dst, uint64(s.Subtask))
	dst = binary.AppendUvarint(dst, uint64(s.Parallelism))
	dst = binary.AppendVarint(dst, s.Next)
	dst = binary.AppendVarint(dst, s.End)
	return binary.LittleEndian.AppendUint64(dst, s.Config)
}

func (splitCodec) Decode(src []byte) (Split, int, error) {
	if len(src) == 0 {
		return Split{}, 0, codec.ErrTruncated
	}
	if src[0] != splitFormat {
		return Split{}, 0, fmt.Errorf("%w: nexmark split format %d, want %d", codec.ErrCorrupt, src[0], splitFormat)
	}
	n := 1
	var u [2]uint64
	for i := range u {
		v, k := binary.Uvarint(src[n:])
		if k <= 0 {
			return Split{}, 0, truncatedOrCorrupt(k)
		}
		u[i], n = v, n+k
	}
	var v [2]int64
	for i := range v {
		x, k := binary.Varint(src[n:])
		if k <= 0 {
			return Split{}, 0, truncatedOrCorrupt(k)
		}
		v[i], n = x, n+k
	}
	if len(src)-n < 8 {
		return Split{}, 0, codec.ErrTruncated
	}
	s := Split{Subtask: int(u[0]), Parallelism: int(u[1]), Next: v[0], End: v[1], Config: binary.LittleEndian.Uint64(src[n:])}
	n += 8
	if u[1] < 1 || u[1] > 1<<31 || u[0] >= u[1] || s.Next < 0 || s.End < -1 || int64(s.Subtask) != s.Next%int64(s.Parallelism) {
		return Split{}, 0, fmt.Errorf("%w: %v", codec.ErrCorrupt, s)
	}
	return s, n, nil
}

func truncatedOrCorrupt(k int) error {
	if k == 0 {
		return codec.ErrTruncated
	}
	return fmt.Errorf("%w: varint overflows 64 bits", codec.ErrCorrupt)
}

// encodeEnumState encodes the unassigned splits: the format byte, their
// count, and the splits.
func encodeEnumState(left []Split) []byte {
	b := []byte{splitFormat}
	b = binary.AppendUvarint(b, uint64(len(left)))
	for _, s := range left {
		b = splitCodec{}.AppendEncode(b, s)
	}
	return b
}

func decodeEnumState(b []byte) ([]Split, error) {
	if len(b) == 0 {
		return nil, codec.ErrTruncated
	}
	if b[0] != splitFormat {
		return nil, fmt.Errorf("%w: nexmark enumerator state format %d, want %d", codec.ErrCorrupt, b[0], splitFormat)
	}
	b = b[1:]
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, truncatedOrCorrupt(k)
	}
	b = b[k:]
	if count > uint64(len(b)) {
		return nil, fmt.Errorf("%w: nexmark enumerator state holds %d splits in %d bytes", codec.ErrCorrupt, count, len(b))
	}
	left := make([]Split, 0, count)
	for range count {
		s, n, err := splitCodec{}.Decode(b)
		if err != nil {
			return nil, err
		}
		left = append(left, s)
		b = b[n:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in the nexmark enumerator state", codec.ErrCorrupt, len(b))
	}
	return left, nil
}

// The source implements the contract.
var (
	_ source.Source[Event, Split] = Source{}
	_ source.SplitPauser          = (*reader)(nil)
)
