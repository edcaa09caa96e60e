package weir

import (
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/socket"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/source"
)

// FromSource adds a source (see package source: an enumerator of splits on
// the JobManager, a reader per subtask) to the job. Go cannot infer the
// split type from the source, so name both: FromSource[T, S](env, src, name).
func FromSource[T, S any](env *Environment, src source.Source[T, S], name string) DataStream[T] {
	fac, coord := operator.NewSourceFactory(src)
	n := addNode[T](env, "Source: "+name, fac, false)
	n.IsSource = true
	n.Coordinator = coord
	return newStream[T](env, n)
}

// FromSourceWithWatermarks is FromSource with a watermark strategy on the
// source itself (Flink's env.fromSource(source, strategy, name)): readers
// that emit per split (source.Output.ForSplit) get a watermark generator
// and idleness per split, and the source's watermark is the minimum over
// its active splits, so a split read ahead of another does not make the
// other's records late. Records collected directly share one more
// generator. ws.Timestamp may be nil: the reader's timestamps are kept.
// Each split's watermark is in the source's checkpoints, so after a
// restore a split goes on from its own. With ws.Alignment
// (WithWatermarkAlignment) the source's watermark is aligned with the
// other sources of its group.
func FromSourceWithWatermarks[T, S any](env *Environment, src source.Source[T, S], ws WatermarkStrategy[T], name string) DataStream[T] {
	interval := ws.Interval
	if interval <= 0 {
		interval = env.cfg.AutoWatermarkInterval
	}
	sw := operator.SourceWatermarks[T]{Timestamp: ws.Timestamp, Delay: ws.MaxOutOfOrderness.Milliseconds(),
		Interval: max(interval.Milliseconds(), 1)}
	if ws.IdleTimeout > 0 {
		sw.IdleTimeout = max(ws.IdleTimeout.Milliseconds(), 1)
	}
	if g := ws.Generator; g != nil {
		sw.NewGenerator = func() operator.WatermarkGenerator[T] { return generatorAdapter[T]{g()} }
	}
	if a := ws.Alignment; a != nil {
		// Validated when the job starts (the source fails with what was wrong).
		iv := a.UpdateInterval
		if iv == 0 {
			iv = defaultAlignmentUpdateInterval
		}
		sw.Align = &operator.Alignment{Group: a.Group, MaxDrift: a.MaxDrift.Milliseconds(), Interval: iv.Milliseconds()}
		if a.MaxDrift < 0 {
			sw.Align.MaxDrift = min(a.MaxDrift.Milliseconds(), -1) // a negative drift stays negative: an error
		}
	}
	fac, coord := operator.NewSourceFactoryWithWatermarks(src, sw)
	n := addNode[T](env, "Source: "+name, fac, false)
	n.IsSource = true
	n.Coordinator = coord
	return newStream[T](env, n)
}

// generatorAdapter lets the engine call a user's WatermarkGenerator.
type generatorAdapter[T any] struct{ g WatermarkGenerator[T] }

func (a generatorAdapter[T]) OnEvent(v T, ts int64, out operator.WatermarkEmitter) {
	a.g.OnEvent(v, ts, out)
}
func (a generatorAdapter[T]) OnPeriodicEmit(out operator.WatermarkEmitter) { a.g.OnPeriodicEmit(out) }

// FromSlice emits the elements of items, in order. Like Flink's fromData it
// runs at parallelism 1.
func FromSlice[T any](env *Environment, items []T) DataStream[T] {
	return FromSource[T, datagen.Split](env, datagen.Slice[T]{Items: items}, "Slice").SetParallelism(1)
}

// Sequence emits the numbers from..to (inclusive), split among subtasks.
func Sequence(env *Environment, from, to int64) DataStream[int64] {
	return FromSource[int64, datagen.Split](env, datagen.Sequence{From: from, To: to}, "Sequence")
}

// Generate emits fn(i) for i in [0, count) (count < 0: forever), split among
// subtasks. ratePerSecond > 0 limits the source's total rate; 0 and +Inf mean
// no limit; a negative or NaN rate fails the job when it opens. Positions
// are checkpointed: after a restore it goes on from where it was.
func Generate[T any](env *Environment, count int64, ratePerSecond float64, fn func(i int64) T) DataStream[T] {
	return FromSource[T, datagen.Split](env, datagen.Generator[T]{Count: count, Fn: fn, RatePerSecond: ratePerSecond}, "Generator")
}

// ReadTextFile emits the lines of a file, or of all files in a directory
// (names starting with . or _ are skipped), or of standard input ("-").
// Large inputs are split among the source's subtasks; positions are
// checkpointed (standard input and pipes cannot be replayed).
func ReadTextFile(env *Environment, path string) DataStream[string] {
	return FromSource[string, file.Split](env, file.TextSource{Path: path}, path)
}

// SocketTextStream emits the lines received from a TCP server at address
// (host:port), until the server closes the connection. It runs at
// parallelism 1 and is not replayable: after a restore it reads what the
// server sends from then on.
func SocketTextStream(env *Environment, address string) DataStream[string] {
	return FromSource[string, socket.Split](env, socket.TextSource{Address: address}, "Socket "+address).SetParallelism(1)
}
