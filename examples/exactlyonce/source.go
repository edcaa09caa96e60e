package main

import (
	"fmt"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// Range is a split of the source: the numbers [Next, End). Next is the
// position the reader reached; checkpoints store it.
type Range struct {
	ID        string
	Next, End int64
}

// Numbers is a bounded source of the numbers [0, N), cut into Splits
// ranges and emitted at about PerSecond numbers per second per reader.
type Numbers struct {
	N, Splits int64
	PerSecond int
}

var rangesCodec = codec.Slice(codec.MustFor[Range]())

func (s Numbers) Boundedness() source.Boundedness { return source.Bounded }
func (s Numbers) SplitCodec() codec.Codec[Range]  { return codec.MustFor[Range]() }

// CreateEnumerator starts with every range unassigned, or with the
// unassigned ones a checkpoint stored.
func (s Numbers) CreateEnumerator(ctx source.EnumeratorContext[Range], restored []byte) (source.Enumerator[Range], error) {
	e := &enumerator{ctx: ctx}
	if restored != nil {
		rs, _, err := rangesCodec.Decode(restored)
		if err != nil {
			return nil, fmt.Errorf("numbers source: restoring the enumerator: %w", err)
		}
		e.unassigned = rs
		return e, nil
	}
	size := (s.N + s.Splits - 1) / s.Splits
	for start := int64(0); start < s.N; start += size {
		e.unassigned = append(e.unassigned, Range{ID: fmt.Sprint("range-", start), Next: start, End: min(start+size, s.N)})
	}
	return e, nil
}

func (s Numbers) CreateReader(ctx source.ReaderContext) (source.Reader[int64, Range], error) {
	return &reader{ctx: ctx, batch: max(1, s.PerSecond/100)}, nil
}

// enumerator hands out one range per request. Its methods run on one
// goroutine.
type enumerator struct {
	ctx        source.EnumeratorContext[Range]
	unassigned []Range
}

func (e *enumerator) Start() error        { return nil }
func (e *enumerator) AddReader(int) error { return nil }
func (e *enumerator) Close() error        { return nil }
func (e *enumerator) Snapshot(int64) ([]byte, error) {
	return rangesCodec.AppendEncode(nil, e.unassigned), nil
}

func (e *enumerator) HandleSplitRequest(subtask int) error {
	if len(e.unassigned) == 0 {
		e.ctx.NoMoreSplits(subtask)
		return nil
	}
	e.ctx.Assign(subtask, e.unassigned[0])
	e.unassigned = e.unassigned[1:]
	return nil
}

// reader emits the numbers of its ranges, batch numbers every 10 ms. Its
// methods run on its subtask's goroutine, never concurrently.
type reader struct {
	ctx       source.ReaderContext
	splits    []Range // the first is being read
	noMore    bool
	requested bool
	batch     int
}

func (r *reader) Start() error { r.ask(); return nil }

func (r *reader) ask() {
	if !r.requested && !r.noMore {
		r.requested = true
		r.ctx.RequestSplit()
	}
}

func (r *reader) AddSplits(rs []Range) { r.splits = append(r.splits, rs...); r.requested = false }
func (r *reader) NoMoreSplits()        { r.noMore = true }

func (r *reader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if len(r.splits) == 0 {
		if r.noMore {
			return source.EndOfInput, nil, 0, nil
		}
		r.ask()
		return source.NothingAvailable, nil, 10 * time.Millisecond, nil
	}
	s := &r.splits[0]
	for i := 0; i < r.batch && s.Next < s.End; i++ {
		out.Collect(s.Next)
		s.Next++
	}
	if s.Next == s.End {
		r.splits = r.splits[1:]
		r.ask()
	}
	// Slow down, so that the job lasts long enough for a few checkpoints.
	return source.NothingAvailable, nil, 10 * time.Millisecond, nil
}

// SnapshotState stores the ranges not finished, with the position reached:
// every number emitted before the barrier is below it.
func (r *reader) SnapshotState(int64) ([]Range, error) {
	return append([]Range(nil), r.splits...), nil
}

func (r *reader) NotifyCheckpointComplete(int64) error { return nil }
func (r *reader) Close() error                         { return nil }
