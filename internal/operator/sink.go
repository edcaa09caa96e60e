package operator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/state"
)

// sinkContext implements sink.Context.
type sinkContext struct{ ctx *Context }

func (s sinkContext) Subtask() int              { return s.ctx.Subtask }
func (s sinkContext) Parallelism() int          { return s.ctx.Parallelism }
func (s sinkContext) Attempt() int              { return s.ctx.Attempt }
func (s sinkContext) Checkpointing() bool       { return s.ctx.Checkpointing }
func (s sinkContext) Canceled() <-chan struct{} { return s.ctx.Cancel }
func (s sinkContext) CheckpointInterval() time.Duration {
	return s.ctx.CheckpointInterval
}
func (s sinkContext) RestoredCheckpoint() int64 { return s.ctx.RestoredCheckpoint }
func (s sinkContext) Lineage() string           { return s.ctx.Lineage }

// NewSinkFactory returns the factory of a sink's operator.
func NewSinkFactory[T any](s sink.Sink[T]) Factory {
	return FactoryFunc(func(ctx *Context, _ any) (Instance, error) {
		w, err := s.CreateWriter(sinkContext{ctx})
		if err != nil {
			return Instance{}, err
		}
		op := &SinkOperator[T]{w: w, ctx: ctx}
		return Instance{Op: op, Inputs: []any{Input[T](op)}}, nil
	})
}

// SinkOperator runs a sink.Writer as the tail of a chain.
type SinkOperator[T any] struct {
	w   sink.Writer[T]
	ctx *Context
}

// ProcessElement implements Input.
func (s *SinkOperator[T]) ProcessElement(v T, ts int64) {
	s.ctx.Enter()
	if err := s.w.Write(v, ts); err != nil {
		Fail(err)
	}
}

// ProcessWatermark implements Input.
func (s *SinkOperator[T]) ProcessWatermark(int64) {}

// FlushOutput implements OutputFlusher (the buffer timeout).
func (s *SinkOperator[T]) FlushOutput() error { return s.w.Flush(false) }

// SnapshotState implements Snapshotter: everything written before the
// barrier is pushed out.
func (s *SinkOperator[T]) SnapshotState(int64) error { return s.w.Flush(false) }

// Open implements Lifecycle.
func (s *SinkOperator[T]) Open(*Context) error { return nil }

// Finish implements Lifecycle.
func (s *SinkOperator[T]) Finish() error { return s.w.Flush(true) }

// Close implements Lifecycle.
func (s *SinkOperator[T]) Close() error { return s.w.Close() }

// OutputFlusher is implemented by operators that hold output back; the task
// calls FlushOutput on its buffer timeout.
type OutputFlusher interface{ FlushOutput() error }

// pendingState is the operator list state of a committing sink: committables
// prepared at a barrier and not yet committed, each tagged with its
// checkpoint: 8-byte big-endian checkpoint id, then the encoded committable.
const pendingState = "sink-pending-committables"

// NewCommittingSinkFactory returns the factory of a two-phase-commit sink's operator.
func NewCommittingSinkFactory[T, C any](s sink.TwoPhaseCommitting[T, C]) Factory {
	return FactoryFunc(func(ctx *Context, _ any) (Instance, error) {
		w, err := s.CreateWriter(sinkContext{ctx})
		if err != nil {
			return Instance{}, err
		}
		c, err := s.CreateCommitter(sinkContext{ctx})
		if err != nil {
			w.Close()
			return Instance{}, err
		}
		op := &CommittingSinkOperator[T, C]{w: w, c: c, codec: s.CommittableCodec(), ctx: ctx}
		return Instance{Op: op, Inputs: []any{Input[T](op)}}, nil
	})
}

// CommittingSinkOperator runs a two-phase-commit sink: it pre-commits at
// every barrier (the committables go into the checkpoint) and commits them
// when the checkpoint completes; after a restore it commits what the
// restored checkpoint pre-committed.
type CommittingSinkOperator[T, C any] struct {
	w       sink.CommittingWriter[T, C]
	c       sink.Committer[C]
	codec   codec.Codec[C]
	ctx     *Context
	state   state.ListState[[]byte]
	pending []pendingCommit[C] // in checkpoint order; mirrors state
}

type pendingCommit[C any] struct {
	checkpoint int64
	c          C
}

// InitializeState implements StateInitializer.
func (s *CommittingSinkOperator[T, C]) InitializeState(restored bool) error {
	s.state = state.GetOperatorListState(s.ctx.OperatorState(), state.ListDescriptor[[]byte]{Name: pendingState, Codec: codec.Bytes()})
	if !restored {
		return nil
	}
	var cs []C
	for _, e := range s.state.Get() {
		if len(e) < 8 {
			return errors.New("sink: corrupt pending committable in the restored state")
		}
		c, _, err := s.codec.Decode(e[8:])
		if err != nil {
			return fmt.Errorf("sink: restoring a pending committable: %w", err)
		}
		cs = append(cs, c)
	}
	// The restored checkpoint is complete: what it pre-committed is final.
	if len(cs) > 0 {
		if err := s.c.Commit(cs); err != nil {
			return fmt.Errorf("sink: committing restored committables: %w", err)
		}
	}
	s.state.Clear()
	return nil
}

// ProcessElement implements Input.
func (s *CommittingSinkOperator[T, C]) ProcessElement(v T, ts int64) {
	s.ctx.Enter()
	if err := s.w.Write(v, ts); err != nil {
		Fail(err)
	}
}

// ProcessWatermark implements Input.
func (s *CommittingSinkOperator[T, C]) ProcessWatermark(int64) {}

// FlushOutput implements OutputFlusher.
func (s *CommittingSinkOperator[T, C]) FlushOutput() error { return s.w.Flush(false) }

// SnapshotState implements Snapshotter: flush and pre-commit everything
// written before the barrier, and keep the committables in the checkpoint.
func (s *CommittingSinkOperator[T, C]) SnapshotState(id int64) error {
	if b, ok := s.w.(sink.BarrierAware); ok {
		if err := b.Barrier(id); err != nil {
			return err
		}
	}
	if err := s.w.Flush(false); err != nil {
		return err
	}
	cs, err := s.w.PrepareCommit()
	if err != nil {
		return err
	}
	for _, c := range cs {
		s.pending = append(s.pending, pendingCommit[C]{checkpoint: id, c: c})
	}
	s.syncState()
	return nil
}

func (s *CommittingSinkOperator[T, C]) syncState() {
	enc := make([][]byte, len(s.pending))
	for i, p := range s.pending {
		enc[i] = s.codec.AppendEncode(binary.BigEndian.AppendUint64(nil, uint64(p.checkpoint)), p.c)
	}
	s.state.Update(enc)
}

// NotifyCheckpointComplete implements CheckpointListener: commit what
// checkpoints up to id pre-committed (committables of aborted checkpoints
// are committed with the next one that completes).
func (s *CommittingSinkOperator[T, C]) NotifyCheckpointComplete(id int64) error {
	n := 0
	for n < len(s.pending) && s.pending[n].checkpoint <= id {
		n++
	}
	if n == 0 {
		return nil
	}
	cs := make([]C, n)
	for i := range n {
		cs[i] = s.pending[i].c
	}
	if err := s.c.Commit(cs); err != nil {
		return fmt.Errorf("sink: committing checkpoint %d: %w", id, err)
	}
	s.pending = slices.Delete(s.pending, 0, n)
	s.syncState()
	return nil
}

// NotifyCheckpointAborted implements CheckpointListener.
func (s *CommittingSinkOperator[T, C]) NotifyCheckpointAborted(int64) {}

// Open implements Lifecycle.
func (s *CommittingSinkOperator[T, C]) Open(*Context) error { return nil }

// Finish implements Lifecycle. Without checkpoints the output is committed
// now, with what savepoints pre-committed before (savepoints commit
// nothing themselves); with them, the final checkpoint pre-commits it and
// its completion commits it.
func (s *CommittingSinkOperator[T, C]) Finish() error {
	if err := s.w.Flush(true); err != nil {
		return err
	}
	if s.ctx.Checkpointing {
		return nil
	}
	cs, err := s.w.PrepareCommit()
	if err != nil {
		return err
	}
	all := make([]C, 0, len(s.pending)+len(cs))
	for _, p := range s.pending {
		all = append(all, p.c)
	}
	if all = append(all, cs...); len(all) == 0 {
		return nil
	}
	if err := s.c.Commit(all); err != nil {
		return err
	}
	s.pending = nil
	s.syncState()
	return nil
}

// Close implements Lifecycle.
func (s *CommittingSinkOperator[T, C]) Close() error {
	return errors.Join(s.w.Close(), s.c.Close())
}
