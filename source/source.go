package source

import (
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
)

// Boundedness says whether a source ends.
type Boundedness int

const (
	// Bounded sources end once every split is read.
	Bounded Boundedness = iota
	// Unbounded sources may run forever.
	Unbounded
)

// Source is a source of records of type T, read in splits of type S. A split
// value carries its position: the reader returns splits with the position
// reached from SnapshotState, and gets them back through AddSplits after a
// restore.
type Source[T, S any] interface {
	Boundedness() Boundedness
	// SplitCodec encodes splits (with their positions) in checkpoints and
	// in messages between enumerator and readers.
	SplitCodec() codec.Codec[S]
	// CreateEnumerator creates the split enumerator, on the JobManager.
	// restored is its state from a checkpoint (see Enumerator.Snapshot), or
	// nil on a fresh start.
	CreateEnumerator(ctx EnumeratorContext[S], restored []byte) (Enumerator[S], error)
	// CreateReader creates the reader of one subtask.
	CreateReader(ctx ReaderContext) (Reader[T, S], error)
}

// EnumeratorContext is what an enumerator can do. Its methods may only be
// called from the enumerator's own methods.
type EnumeratorContext[S any] interface {
	// Parallelism is the number of reader subtasks.
	Parallelism() int
	// Assign hands splits to reader subtask i.
	Assign(subtask int, splits ...S)
	// NoMoreSplits tells reader subtask i that no more splits will come: a
	// bounded reader ends once it has read the ones it has.
	NoMoreSplits(subtask int)
	// Registered lists the reader subtasks that are running.
	Registered() []int
}

// Enumerator discovers splits and assigns them. Its methods run on one
// goroutine of the JobManager, never concurrently.
type Enumerator[S any] interface {
	// Start is called once, before anything else.
	Start() error
	// AddReader is called when reader subtask i starts (also after a restart).
	AddReader(subtask int) error
	// HandleSplitRequest is called when reader subtask i asks for a split.
	HandleSplitRequest(subtask int) error
	// Snapshot returns the enumerator's state for checkpoint id: what it
	// needs to go on after a restore (typically its unassigned splits).
	// Splits it assigns after the snapshot are assigned again after a
	// restore from this checkpoint.
	Snapshot(checkpointID int64) ([]byte, error)
	Close() error
}

// ReaderContext is what a reader knows of its subtask and can ask for.
type ReaderContext interface {
	Subtask() int
	Parallelism() int
	// RequestSplit asks the enumerator for a split; it comes through AddSplits.
	RequestSplit()
	// Clock is processing time, for rate limits and timeouts.
	Clock() clock.Clock
}

// Output receives a reader's records.
type Output[T any] interface {
	// Collect emits a record without an event timestamp.
	Collect(v T)
	// CollectWithTimestamp emits a record with its event time (ms).
	CollectWithTimestamp(v T, ts int64)
	// CollectBatch emits records without event timestamps, in order: the
	// same as Collect on each, at one call per batch instead of per record
	// (for readers that produce records faster than a call costs).
	CollectBatch(vs []T)
	// ShouldYield reports that the task needs the thread back: its output
	// ran out of buffers or a checkpoint barrier is waiting. A reader that
	// emits a batch per poll checks it between records and returns
	// MoreAvailable when it is set; one that ignores it stays correct, but
	// under backpressure it blocks while emitting and delays checkpoints.
	ShouldYield() bool
	// ForSplit returns the output for the records of one split (Flink's
	// ReaderOutput.createOutputForSplit): with a watermark strategy on the
	// source (weir.FromSourceWithWatermarks) each split gets its own
	// watermark generator and idleness, and the source's watermark is the
	// minimum over its splits, so splits read at different speeds do not
	// make each other's records late. Call it once per split and keep the
	// result (it is a lookup); the same id returns the same output until
	// ReleaseSplit. Create the outputs of the splits a reader holds before
	// it emits records of any of them: a split without an output does not
	// hold the watermark back yet. Without a strategy it returns this
	// output.
	ForSplit(splitID string) SplitOutput[T]
	// ReleaseSplit says that a split is finished: its output leaves the
	// source's watermark minimum.
	ReleaseSplit(splitID string)
}

// SplitOutput receives the records of one split (Flink's SourceOutput).
type SplitOutput[T any] interface {
	Collect(v T)
	CollectWithTimestamp(v T, ts int64)
	CollectBatch(vs []T)
	// EmitWatermark emits a watermark for this split (readers whose
	// storage knows event-time progress); it makes an idle split active.
	// Without a strategy on the source it is ignored.
	EmitWatermark(wm int64)
	// MarkIdle leaves the split out of the source's watermark until it
	// emits again.
	MarkIdle()
}

// Status is what a reader reports after a poll.
type Status int

const (
	// MoreAvailable: poll again soon.
	MoreAvailable Status = iota
	// NothingAvailable: wait first (see Reader.PollNext).
	NothingAvailable
	// EndOfInput: the reader is done (it had no more splits coming and read
	// all it had).
	EndOfInput
)

// Reader reads the splits of one subtask. All its methods run on the
// subtask's goroutine, never concurrently, so a reader needs no locks.
type Reader[T, S any] interface {
	// Start is called before the first poll, after restored splits were added.
	Start() error
	// PollNext emits up to a bounded batch of records into out (a few
	// thousand at most: the task runs its mailbox, timers and barriers
	// between polls). With NothingAvailable the task waits until wake is
	// signalled or closed, or retryAfter has passed (whichever comes first;
	// with neither, it polls again after a millisecond).
	PollNext(out Output[T]) (status Status, wake <-chan struct{}, retryAfter time.Duration, err error)
	// AddSplits gives the reader more splits (assigned or restored).
	AddSplits(splits []S)
	// NoMoreSplits says that no more splits will come.
	NoMoreSplits()
	// SnapshotState returns the reader's unfinished splits with the
	// positions reached, at a checkpoint barrier: every record emitted
	// before this call is before the positions, every later one after.
	SnapshotState(checkpointID int64) ([]S, error)
	// NotifyCheckpointComplete says that checkpoint id is complete (a Kafka
	// reader commits offsets back, say). Errors fail the job.
	NotifyCheckpointComplete(checkpointID int64) error
	Close() error
}

// SplitPauser is implemented by readers that can stop reading some of
// their splits for a while (Flink's SourceReader.pauseOrResumeSplits). With
// watermark alignment (weir.WatermarkStrategy.WithWatermarkAlignment) the
// source pauses the splits whose own watermark is ahead of what the
// alignment group allows, and resumes them when it allows more, so that a
// reader holding a fast and a slow split reads on in the slow one. Ids are
// those given to Output.ForSplit. A paused split must not emit records
// until resumed; when every split a reader holds is paused, PollNext
// returns NothingAvailable (with a wake channel that a resume signals, or
// a retry delay), never busy-looping. Ids the reader does not hold (any
// more) are ignored. A reader that does not implement it is only paused
// as a whole, when the source's combined watermark is ahead.
type SplitPauser interface {
	PauseOrResumeSplits(pause, resume []string)
}

// AsyncCaller is implemented by the EnumeratorContext of the engine (and
// of connector tests) for enumerators that do periodic work, such as
// discovering new Kafka partitions (Flink's SplitEnumeratorContext.callAsync).
// An enumerator asserts its context to it; a context that does not
// implement it offers no periodic work.
type AsyncCaller interface {
	// CallAsync runs fn off the enumerator's goroutine, after initialDelay
	// and then every period (once when period <= 0), and hands each
	// result to handler on the enumerator's goroutine, between its other
	// methods. An error from handler fails the job (as an error from an
	// enumerator method does). The calls stop when the enumerator is
	// closed; fn must not call the context.
	CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration)
}

// Metrics lets a reader publish metrics of its own. Like every reader
// method they are only used on the subtask's goroutine. REST shows them on
// the source's vertex as "<subtask>.<operator name>.<name>".
type Metrics interface {
	// Counter returns the counter named name (the same one for the same name).
	Counter(name string) Counter
	// Gauge returns the gauge named name (the same one for the same name).
	Gauge(name string) Gauge
}

// Counter is a metric that counts.
type Counter interface {
	Inc()
	Add(n int64)
}

// Gauge is a metric that holds a value set by its owner.
type Gauge interface {
	Set(v int64)
}

// ReaderMetrics returns the metrics of the reader whose context is ctx: the
// engine's ReaderContext has a Metrics method; any other context gets
// metrics that count but are not published.
func ReaderMetrics(ctx ReaderContext) Metrics {
	if m, ok := ctx.(interface{ Metrics() Metrics }); ok {
		return m.Metrics()
	}
	return noMetrics{}
}

type noMetrics struct{}

type noMetric struct{}

func (noMetric) Inc()      {}
func (noMetric) Add(int64) {}
func (noMetric) Set(int64) {}

func (noMetrics) Counter(string) Counter { return noMetric{} }
func (noMetrics) Gauge(string) Gauge     { return noMetric{} }
