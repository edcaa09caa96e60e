package operator

import (
	"fmt"
	"reflect"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/network"
)

// SelectorFactory creates, for one producer subtask, the function that picks
// the channel (0..r.Channels-1) of a record of type T. It returns a
// func(T) int, a Selector[T], or nil to broadcast every record to all
// channels.
type SelectorFactory func(r Route) any

// Route is the producer subtask a selector is made for.
type Route struct {
	Channels int // the consumer subtasks it writes to
	Subtask  int // the producer's index
	// MaxParallelism is the consumer's number of key groups, and KeyHash
	// the job's key hash version: a key selector must give each key the
	// key group the consumer's keyed state gives it.
	MaxParallelism int
	KeyHash        keygroup.HashVersion
}

// Selector is a channel selector that can also route a whole batch in one
// call: Batch(vs, chs) sets chs[i] to One(vs[i]) for every i (len(chs) ==
// len(vs)). Batch must be pure (a key selector): the writer routes a batch
// before it writes any of it. Hashing a batch's keys in one loop costs one
// indirect call per record (the key function) instead of two, and lets the
// writer append the records without a call per record.
type Selector[T any] struct {
	One   func(T) int
	Batch func(vs []T, chs []int32)
}

// StreamType is the type-erased handle on a stream's element type T, created
// once per stream when the graph is built.
type StreamType interface {
	// TypeName is the Go type, for plans and the graph fingerprint.
	TypeName() string
	// CodecErr is non-nil when no codec could be found for T; it only matters
	// when the stream crosses a network edge.
	CodecErr() error
	// NewWriter returns an Input[T] that writes into rp, and its control
	// side; r.Channels is taken from rp.
	NewWriter(rp *network.ResultPartition, sel SelectorFactory, r Route, cancel <-chan struct{}, stats *IOStats) (any, PartitionWriter)
	// NewReader decodes T records for in (an Input[T]).
	NewReader(in any, channels int, stats *IOStats, name string) RecordReader
	// Fanout combines several Input[T] into one (none: a discarding one).
	Fanout(outs []any) any
	// TeeWatermarks returns main (an Input[T]) forwarding its watermarks to
	// sides as well: the side outputs of an operator see its event time.
	TeeWatermarks(main any, sides []WatermarkInput) any
}

// WatermarkInput is the watermark half of an Input of any type.
type WatermarkInput interface{ ProcessWatermark(wm int64) }

type teeWatermarks[T any] struct {
	Input[T]
	sides []WatermarkInput
}

func (t *teeWatermarks[T]) ProcessWatermark(wm int64) {
	for _, s := range t.sides {
		s.ProcessWatermark(wm)
	}
	t.Input.ProcessWatermark(wm)
}

func (s *streamType[T]) TeeWatermarks(main any, sides []WatermarkInput) any {
	return &teeWatermarks[T]{Input: main.(Input[T]), sides: sides}
}

type streamType[T any] struct {
	codec codec.Codec[T]
	err   error
}

// NewStreamType returns the StreamType of T with codec c. If c is nil the
// codec is derived from T; a derivation error is kept for CodecErr.
func NewStreamType[T any](c codec.Codec[T]) StreamType {
	if c != nil {
		return &streamType[T]{codec: c}
	}
	c, err := codec.For[T]()
	return &streamType[T]{codec: c, err: err}
}

func (s *streamType[T]) TypeName() string { return reflect.TypeFor[T]().String() }
func (s *streamType[T]) CodecErr() error  { return s.err }

func (s *streamType[T]) NewWriter(rp *network.ResultPartition, sel SelectorFactory, r Route, cancel <-chan struct{}, stats *IOStats) (any, PartitionWriter) {
	var f func(T) int
	var batch func([]T, []int32)
	if sel != nil {
		r.Channels = len(rp.Subs)
		switch g := sel(r).(type) {
		case nil:
		case Selector[T]:
			f, batch = g.One, g.Batch
		default:
			f = g.(func(T) int)
		}
	}
	w := NewWriter(s.codec, rp, f, cancel, stats)
	w.selBatch = batch
	return w, w
}

func (s *streamType[T]) NewReader(in any, channels int, stats *IOStats, name string) RecordReader {
	return NewReader(s.codec, in.(Input[T]), channels, stats, name)
}

func (s *streamType[T]) Fanout(outs []any) any {
	switch len(outs) {
	case 0:
		return discard[T]{}
	case 1:
		return outs[0]
	}
	f := &fanout[T]{outs: make([]Input[T], len(outs))}
	for i, o := range outs {
		in, ok := o.(Input[T])
		if !ok {
			panic(fmt.Sprintf("operator: output %d is %T, not an Input[%s]", i, o, s.TypeName()))
		}
		f.outs[i] = in
	}
	return f
}
