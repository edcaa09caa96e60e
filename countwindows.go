package weir

// CountWindow cuts each key's elements into tumbling windows of size
// elements (Flink's KeyedStream.countWindow(size)): the GlobalWindow with
// PurgingTrigger(CountTrigger(size)). A key's last, incomplete window
// never fires (as in Flink). Results carry the GlobalWindow's max
// timestamp, math.MaxInt64.
func CountWindow[K comparable, T any](ks KeyedStream[K, T], size int64) WindowedStream[K, T] {
	return Window(ks, GlobalWindows{}).Trigger(PurgingTrigger(CountTrigger[T](size)))
}

// CountWindowSliding fires, every slide elements of a key, a window of the
// key's last size elements (Flink's countWindow(size, slide)): the
// GlobalWindow with CountEvictor(size) and CountTrigger(slide).
func CountWindowSliding[K comparable, T any](ks KeyedStream[K, T], size, slide int64) WindowedStream[K, T] {
	return Window(ks, GlobalWindows{}).Evictor(CountEvictor[T](size)).Trigger(CountTrigger[T](slide))
}
