package operator

// fanout sends every element to several outputs.
type fanout[T any] struct{ outs []Input[T] }

func (f *fanout[T]) ProcessElement(v T, ts int64) {
	for _, o := range f.outs {
		o.ProcessElement(v, ts)
	}
}

func (f *fanout[T]) ProcessWatermark(wm int64) {
	for _, o := range f.outs {
		o.ProcessWatermark(wm)
	}
}

// discard drops everything; it is the output of an operator with no consumer.
type discard[T any] struct{}

func (discard[T]) ProcessElement(T, int64) {}
func (discard[T]) ProcessWatermark(int64)  {}
func (discard[T]) ProcessBatch([]T, int64) {}
