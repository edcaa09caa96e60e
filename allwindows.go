package weir

import "time"

// allKey is the one key of a non-keyed windowed stream: Flink's windowAll
// keys the stream by a constant and runs the window operator at
// parallelism 1.
type allKey = uint8

// AllWindowedStream is a non-keyed stream cut into windows (Flink's
// AllWindowedStream): all elements go to one window operator subtask.
type AllWindowedStream[T any] struct{ ws WindowedStream[allKey, T] }

// WindowAll groups all elements of s into the windows a assigns. The window
// operator runs at parallelism 1 (its results must not be given another
// parallelism).
func WindowAll[T any](s DataStream[T], a WindowAssigner) AllWindowedStream[T] {
	return AllWindowedStream[T]{Window(KeyBy(s, func(T) allKey { return 0 }), a)}
}

// CountWindowAll cuts the stream into tumbling windows of size elements
// (Flink's countWindowAll(size)).
func CountWindowAll[T any](s DataStream[T], size int64) AllWindowedStream[T] {
	return AllWindowedStream[T]{CountWindow(KeyBy(s, func(T) allKey { return 0 }), size)}
}

// CountWindowAllSliding fires, every slide elements, a window of the last
// size elements (Flink's countWindowAll(size, slide)).
func CountWindowAllSliding[T any](s DataStream[T], size, slide int64) AllWindowedStream[T] {
	return AllWindowedStream[T]{CountWindowSliding(KeyBy(s, func(T) allKey { return 0 }), size, slide)}
}

// Trigger is WindowedStream.Trigger.
func (w AllWindowedStream[T]) Trigger(t Trigger[T]) AllWindowedStream[T] {
	return AllWindowedStream[T]{w.ws.Trigger(t)}
}

// Evictor is WindowedStream.Evictor.
func (w AllWindowedStream[T]) Evictor(e Evictor[T]) AllWindowedStream[T] {
	return AllWindowedStream[T]{w.ws.Evictor(e)}
}

// AllowedLateness is WindowedStream.AllowedLateness.
func (w AllWindowedStream[T]) AllowedLateness(d time.Duration) AllWindowedStream[T] {
	return AllWindowedStream[T]{w.ws.AllowedLateness(d)}
}

// SideOutputLateData is WindowedStream.SideOutputLateData.
func (w AllWindowedStream[T]) SideOutputLateData(tag OutputTag[T]) AllWindowedStream[T] {
	return AllWindowedStream[T]{w.ws.SideOutputLateData(tag)}
}

// AllWindowContext is what a process all-window function sees (Flink's
// ProcessAllWindowFunction.Context): the window being fired; there is no
// key. Timestamp is the window's max timestamp.
type AllWindowContext interface {
	Context
	Window() TimeWindow
	CurrentWatermark() int64
	CurrentProcessingTime() int64
}

// ProcessAllWindowFunction computes a window's results from its contents
// on a non-keyed stream.
type ProcessAllWindowFunction[IN, OUT any] interface {
	Process(ctx AllWindowContext, elements []IN, out Collector[OUT]) error
}

// ProcessAllWindowFunc adapts a function to ProcessAllWindowFunction.
type ProcessAllWindowFunc[IN, OUT any] func(ctx AllWindowContext, elements []IN, out Collector[OUT]) error

// Process implements ProcessAllWindowFunction.
func (f ProcessAllWindowFunc[IN, OUT]) Process(ctx AllWindowContext, elements []IN, out Collector[OUT]) error {
	return f(ctx, elements, out)
}

// allParallelism forces the non-keyed window operator to one subtask.
func allParallelism[U any](s DataStream[U]) DataStream[U] { return s.SetParallelism(1) }

// WindowAllReduce is WindowReduce on a non-keyed stream.
func WindowAllReduce[T any](w AllWindowedStream[T], reduce func(a, b T) T) DataStream[T] {
	return allParallelism(windowOperator[allKey, T, T, T](w.ws, "WindowAll(Reduce)", evictable(w.ws, reducer[T](reduce), reduceAll(reduce)), emitAsIs[allKey, T]))
}

// WindowAllReduceProcess is WindowReduceProcess on a non-keyed stream.
func WindowAllReduceProcess[T, U any](w AllWindowedStream[T], reduce func(a, b T) T, fn ProcessAllWindowFunction[T, U]) DataStream[U] {
	checkHooks(w.ws.ks.env, "WindowAllReduceProcess", fn, windowHooks())
	return allParallelism(windowOperator[allKey, T, T, U](w.ws, "WindowAll(Reduce)", evictable(w.ws, reducer[T](reduce), reduceAll(reduce)), emitAllOne(fn)))
}

// WindowAllAggregate is WindowAggregate on a non-keyed stream.
func WindowAllAggregate[T, ACC, R any](w AllWindowedStream[T], agg AggregateFunction[T, ACC, R]) DataStream[R] {
	return allParallelism(windowOperator[allKey, T, R, R](w.ws, "WindowAll(Aggregate)", evictable(w.ws, aggregator[T, ACC, R](agg), aggregateAll(agg)), emitAsIs[allKey, R]))
}

// WindowAllAggregateProcess is WindowAggregateProcess on a non-keyed stream.
func WindowAllAggregateProcess[T, ACC, R, U any](w AllWindowedStream[T], agg AggregateFunction[T, ACC, R], fn ProcessAllWindowFunction[R, U]) DataStream[U] {
	checkHooks(w.ws.ks.env, "WindowAllAggregateProcess", fn, windowHooks())
	return allParallelism(windowOperator[allKey, T, R, U](w.ws, "WindowAll(Aggregate)", evictable(w.ws, aggregator[T, ACC, R](agg), aggregateAll(agg)), emitAllOne(fn)))
}

// WindowAllProcess is WindowProcess on a non-keyed stream.
func WindowAllProcess[T, U any](w AllWindowedStream[T], fn ProcessAllWindowFunction[T, U]) DataStream[U] {
	checkHooks(w.ws.ks.env, "WindowAllProcess", fn, windowHooks())
	return allParallelism(windowOperator[allKey, T, []T, U](w.ws, "WindowAll(Process)", evictable(w.ws, lister[T](), listAll[T]), func() (emitter[allKey, []T, U], any) {
		f := instanceOf(fn)
		return func(ctx WindowContext[allKey], els []T, out Collector[U]) error { return f.Process(ctx, els, out) }, f
	}))
}

func emitAllOne[R, U any](fn ProcessAllWindowFunction[R, U]) func() (emitter[allKey, R, U], any) {
	return func() (emitter[allKey, R, U], any) {
		f := instanceOf(fn)
		buf := make([]R, 1)
		return func(ctx WindowContext[allKey], r R, out Collector[U]) error {
			buf[0] = r
			return f.Process(ctx, buf, out)
		}, f
	}
}
